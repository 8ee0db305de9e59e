package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// apiClient talks to the broker under test. It refuses anything but loopback addresses.
type apiClient struct {
	base string
	http *http.Client
}

func newAPIClient(base string, conns int) (*apiClient, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	ips, err := net.LookupIP(u.Hostname())
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return nil, fmt.Errorf("bench only targets loopback; %s resolves to %s", u.Hostname(), ip)
		}
	}
	tr := &http.Transport{MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, MaxConnsPerHost: conns * 2,
		IdleConnTimeout: time.Minute}
	return &apiClient{base: base, http: &http.Client{Transport: tr, Timeout: 130 * time.Second}}, nil
}

// call sends a request and decodes a JSON answer into out (when non-nil); it returns the status.
func (c *apiClient) call(ctx context.Context, method, path string, body []byte, out any) (int, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, r)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := readBody(resp)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil && len(data) > 0 {
		if d, ok := out.(bodyDecoder); ok {
			err = d.decodeBody(data)
		} else {
			err = json.Unmarshal(data, out)
		}
	}
	return resp.StatusCode, err
}

// bodyDecoder is an answer type with its own reader, which call uses instead of
// encoding/json (json.Unmarshaler would still validate the whole body first).
type bodyDecoder interface {
	decodeBody(data []byte) error
}

// pushAnswer is what the push scenario needs of a push answer: how many items the broker
// spooled (status "buffered", docs/api/data-api.md §2.3) instead of writing them to the
// database. A spooling broker answers at the speed of its file buffer, so those items must
// not count as database throughput.
type pushAnswer struct {
	Buffered int
}

func (a *pushAnswer) decodeBody(data []byte) error {
	a.Buffered = bytes.Count(data, []byte(`"status":"buffered"`))
	return nil
}

// popAnswer is what a consumer needs of a pop answer (read by decodePop).
type popAnswer struct {
	LeaseID  string          `json:"leaseId"`
	Messages []poppedMessage `json:"messages"`
}

type poppedMessage struct {
	TransactionID string          `json:"transactionId"`
	PartitionID   string          `json:"partitionId"`
	Partition     string          `json:"partition"`
	Data          json.RawMessage `json:"data"`
}

// readBody reads an answer in one buffer of its announced length, not grown step by step.
func readBody(resp *http.Response) ([]byte, error) {
	if resp.ContentLength <= 0 || resp.ContentLength > 64<<20 {
		return io.ReadAll(resp.Body)
	}
	data := make([]byte, resp.ContentLength)
	_, err := io.ReadFull(resp.Body, data)
	return data, err
}
