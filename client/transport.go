package queen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"
)

// call is one logical request; do turns it into attempts.
type call struct {
	method  string
	path    string // escaped, starting with /
	query   url.Values
	body    any           // JSON-encoded once; nil sends no body
	extra   time.Duration // added to the per-attempt timeout, for long polls
	noRetry bool          // one attempt per URL, no backoff: health reports the state now
}

// do sends c with retries and failover and decodes a 2xx JSON answer into out (when out is
// not nil and the answer has a body). It returns the status code of the last answer.
func (c *Client) do(ctx context.Context, cl call, out any) (int, error) {
	var body []byte
	if cl.body != nil {
		var err error
		if body, err = json.Marshal(cl.body); err != nil {
			return 0, fmt.Errorf("queen: encode %s %s: %w", cl.method, cl.path, err)
		}
	}
	n := len(c.bases)
	// Every instance gets one try even when retries are off: failing over is not retrying.
	attempts := max(1+c.retry.MaxRetries, n)
	if cl.noRetry {
		attempts = n
	}
	start := int(c.preferred.Load())
	backoffs := 0
	var lastErr error
	for a := range attempts {
		// Moving on to another instance is immediate; coming back to one already tried in
		// this call waits, so a broker that is restarting gets time to come back.
		if a > 0 && a%n == 0 {
			if err := sleep(ctx, c.retry.delay(backoffs)); err != nil {
				return 0, err
			}
			backoffs++
		}
		idx := (start + a) % n
		status, data, err := c.attempt(ctx, c.bases[idx], cl, body)
		if err != nil {
			if ctx.Err() != nil {
				return 0, context.Cause(ctx)
			}
			lastErr = fmt.Errorf("queen: %s %s: %w", cl.method, c.bases[idx].String()+cl.path, err)
			continue
		}
		if status >= 500 {
			lastErr = newHTTPError(cl.method, c.bases[idx].String()+cl.path, status, data)
			continue
		}
		c.preferred.Store(int32(idx))
		if status >= 400 {
			return status, newHTTPError(cl.method, c.bases[idx].String()+cl.path, status, data)
		}
		if out != nil && len(data) > 0 && status != http.StatusNoContent {
			if err := json.Unmarshal(data, out); err != nil {
				return status, fmt.Errorf("queen: decode answer of %s %s: %w", cl.method, cl.path, err)
			}
		}
		return status, nil
	}
	return 0, lastErr
}

// attempt sends one request to one base URL and reads the whole answer.
func (c *Client) attempt(ctx context.Context, base *url.URL, cl call, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+cl.extra)
	defer cancel()
	u := base.String() + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	return resp.StatusCode, data, nil
}

// newHTTPError reads the API reference's {"error": "..."} body, falling back to the raw text.
func newHTTPError(method, u string, status int, data []byte) *HTTPError {
	e := &HTTPError{StatusCode: status, Method: method, URL: u, Body: data}
	var b struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(data, &b) == nil && b.Error != "" {
		e.Message = b.Error
	} else {
		e.Message = string(bytes.TrimSpace(data))
	}
	if e.Message == "" {
		e.Message = http.StatusText(status)
	}
	return e
}

// delay is the pause before the k-th backoff (0-based): exponential, capped, with "equal
// jitter" (half fixed, half random) so it keeps growing while clients spread out.
func (p RetryPolicy) delay(k int) time.Duration {
	d := p.BaseDelay
	for i := 0; i < k && d < p.MaxDelay; i++ {
		d *= 2
	}
	if p.MaxDelay > 0 && d > p.MaxDelay {
		d = p.MaxDelay
	}
	if d <= 0 {
		return 0
	}
	half := d / 2
	return half + rand.N(d-half+1)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// pathEscape escapes one path segment; %2F keeps a "/" inside a queue name (docs/api/README.md §2.1).
func pathEscape(s string) string { return url.PathEscape(s) }
