package queen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client talks to one broker, or to several instances of one broker with failover. It is safe
// for concurrent use; create one per process and share it.
type Client struct {
	bases   []*url.URL
	hc      *http.Client
	header  http.Header
	timeout time.Duration
	retry   RetryPolicy
	log     *slog.Logger

	// preferred is the index of the base URL that answered last; requests start there so a
	// failed-over client stays on the instance that works instead of probing the dead one.
	preferred atomic.Int32

	mu      sync.Mutex
	buffers map[*Buffer]struct{} // open buffers, flushed by Close
	closed  bool
}

// RetryPolicy says how often and how patiently a request is retried after a 5xx answer or a
// network error. Delays grow exponentially from BaseDelay up to MaxDelay, with jitter so
// that many clients recovering together do not hit the broker in lockstep.
type RetryPolicy struct {
	// MaxRetries is how many times a request is re-sent after its first attempt (0: never).
	MaxRetries int
	// BaseDelay is the delay before the first retry on the same URL.
	BaseDelay time.Duration
	// MaxDelay caps the delay between two attempts.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is the policy of a client built without WithRetry.
var DefaultRetryPolicy = RetryPolicy{MaxRetries: 3, BaseDelay: 100 * time.Millisecond, MaxDelay: 5 * time.Second}

// DefaultTimeout bounds one attempt of a request when WithTimeout is not given. A long-poll
// pop gets its wait time on top of it.
const DefaultTimeout = 30 * time.Second

// Option configures a Client in New.
type Option func(*Client) error

// WithURLs adds further base URLs of the same broker (other instances of one cluster). A
// request that fails with a network error or a 5xx answer moves on to the next URL at once.
func WithURLs(urls ...string) Option {
	return func(c *Client) error {
		for _, u := range urls {
			if err := c.addBase(u); err != nil {
				return err
			}
		}
		return nil
	}
}

// WithTimeout bounds each attempt of a request (not the whole call with its retries; use the
// context for that). Zero or negative keeps DefaultTimeout.
func WithTimeout(d time.Duration) Option {
	return func(c *Client) error {
		if d > 0 {
			c.timeout = d
		}
		return nil
	}
}

// WithRetry replaces DefaultRetryPolicy. RetryPolicy{} disables retries; a request still
// tries each base URL once before it fails.
func WithRetry(p RetryPolicy) Option {
	return func(c *Client) error {
		if p.MaxRetries < 0 || p.BaseDelay < 0 || p.MaxDelay < 0 {
			return errors.New("queen: retry policy values must not be negative")
		}
		c.retry = p
		return nil
	}
}

// WithHeader adds a header to every request, for example a tracing or tenant header.
func WithHeader(key, value string) Option {
	return func(c *Client) error {
		c.header.Add(key, value)
		return nil
	}
}

// WithBearerToken authenticates every request with Authorization: Bearer <token>, as brokers
// with JWT authentication on require.
func WithBearerToken(token string) Option {
	return func(c *Client) error {
		if token != "" {
			c.header.Set("Authorization", "Bearer "+token)
		}
		return nil
	}
}

// WithHTTPClient sends requests through hc (custom transport, proxy, TLS). Its Timeout should
// be zero or longer than the longest long poll, because the client bounds attempts itself.
func WithHTTPClient(hc *http.Client) Option {
	return func(c *Client) error {
		if hc == nil {
			return errors.New("queen: WithHTTPClient needs a client")
		}
		c.hc = hc
		return nil
	}
}

// WithLogger receives what the client cannot return to a caller: failed background buffer
// flushes, consumer acks and lease renewals (also reported to ConsumeOptions.OnError).
func WithLogger(l *slog.Logger) Option {
	return func(c *Client) error {
		if l != nil {
			c.log = l
		}
		return nil
	}
}

// New returns a client for the broker at baseURL, for example "http://localhost:6632".
// Further instances are given with WithURLs (Go allows one variadic parameter, and it is the
// options). baseURL may also list several URLs separated by commas, as queenctl's --server
// does.
func New(baseURL string, opts ...Option) (*Client, error) {
	c := &Client{
		hc:      &http.Client{},
		header:  make(http.Header),
		timeout: DefaultTimeout,
		retry:   DefaultRetryPolicy,
		log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		buffers: make(map[*Buffer]struct{}),
	}
	for _, u := range strings.Split(baseURL, ",") {
		if err := c.addBase(u); err != nil {
			return nil, err
		}
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// addBase validates and appends one base URL.
func (c *Client) addBase(raw string) error {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("queen: invalid broker URL %q: want http(s)://host[:port]", raw)
	}
	c.bases = append(c.bases, u)
	return nil
}

// URLs returns the base URLs the client uses, in failover order.
func (c *Client) URLs() []string {
	out := make([]string, len(c.bases))
	for i, u := range c.bases {
		out[i] = u.String()
	}
	return out
}

// Close flushes every open Buffer created from this client and closes it. The client itself
// stays usable for direct calls; Close exists so that buffered messages are not lost at exit.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	bufs := make([]*Buffer, 0, len(c.buffers))
	for b := range c.buffers {
		bufs = append(bufs, b)
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for _, b := range bufs {
		if err := b.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// track registers an open buffer so Close can flush it.
func (c *Client) track(b *Buffer) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	c.buffers[b] = struct{}{}
	return nil
}

// untrack forgets a closed buffer.
func (c *Client) untrack(b *Buffer) {
	c.mu.Lock()
	delete(c.buffers, b)
	c.mu.Unlock()
}
