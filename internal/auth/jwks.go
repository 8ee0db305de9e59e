package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

const (
	// kidRefetchInterval limits refetches caused by one unknown kid
	// (docs/api/operations.md §6.1), so a client repeating a bogus kid cannot turn every
	// request into a JWKS download.
	kidRefetchInterval = 30 * time.Second
	// failureBackoff is how long a failed fetch is trusted before the next
	// scheduled attempt. Without it an unreachable JWKS endpoint would cost
	// every request a full fetch timeout.
	failureBackoff = 5 * time.Second
	// maxJWKSBytes bounds the document; real key sets are a few KiB.
	maxJWKSBytes = 1 << 20
	// maxKIDTries bounds the unknown-kid bookkeeping before stale entries are
	// pruned.
	maxKIDTries = 1024
)

// jwksState is one consistent view of the cache. keys is replaced, never
// modified, so a copy of the state can be read without the lock.
type jwksState struct {
	keys      []jwk
	fetchedAt time.Time // last successful fetch; zero before the first
	failedAt  time.Time // last failed fetch, zero when the last fetch succeeded
	err       error     // why the last fetch failed
	gen       uint64    // fetches attempted so far
}

// jwksCache holds the keys of one JWKS endpoint. Keys are fetched lazily: on
// first use, when older than the refresh interval, and when a token names a
// kid the cache does not know. Concurrent requests share one fetch.
type jwksCache struct {
	url     string
	client  *http.Client
	timeout time.Duration
	refresh time.Duration
	now     func() time.Time

	fetchMu sync.Mutex // held for the duration of a fetch

	mu       sync.Mutex // guards st and kidTries
	st       jwksState
	kidTries map[string]time.Time
}

func newJWKSCache(c Config, now func() time.Time) *jwksCache {
	return &jwksCache{url: c.JWKSURL, client: c.HTTPClient, timeout: c.JWKSTimeout,
		refresh: c.JWKSRefreshInterval, now: now, kidTries: make(map[string]time.Time)}
}

func (c *jwksCache) state() jwksState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// due reports whether a scheduled fetch should happen now: never fetched or
// older than the refresh interval, unless a fetch failed moments ago.
func (s jwksState) due(now time.Time, refresh time.Duration) bool {
	if s.recentlyFailed(now) {
		return false
	}
	return s.fetchedAt.IsZero() || now.Sub(s.fetchedAt) >= refresh
}

// recentlyFailed reports whether the last fetch failed within failureBackoff.
func (s jwksState) recentlyFailed(now time.Time) bool {
	return !s.failedAt.IsZero() && now.Sub(s.failedAt) < failureBackoff
}

// keysFor returns the keys that may verify a token signed with alg naming kid
// (all fitting keys when kid is empty), or the answer for the client.
func (c *jwksCache) keysFor(ctx context.Context, kid, alg string) ([]any, *Error) {
	st := c.state()
	fetched := false
	if st.due(c.now(), c.refresh) {
		st, fetched = c.fetch(ctx, st.gen), true
	}
	if st.fetchedAt.IsZero() {
		return nil, ErrJWKSUnavailable.withCause(st.err)
	}
	if kid == "" {
		var out []any
		for _, k := range st.keys {
			if k.fits(alg) {
				out = append(out, k.key)
			}
		}
		if len(out) == 0 {
			return nil, ErrInvalidSignature
		}
		return out, nil
	}
	if k, ok := st.find(kid); ok {
		return fitting(k, alg)
	}
	// The key set may have rotated since it was cached. A fetch made during
	// this very call already answered that question, and still counts as this
	// kid's refetch.
	if fetched {
		_ = c.allowKIDRefetch(kid)
	} else {
		if st.recentlyFailed(c.now()) {
			return nil, ErrJWKSUnavailable.withCause(st.err)
		}
		if !c.allowKIDRefetch(kid) {
			return nil, errUnknownKID(kid)
		}
		st = c.fetch(ctx, st.gen)
		if k, ok := st.find(kid); ok {
			return fitting(k, alg)
		}
	}
	if st.err != nil {
		// The fetch failed and nothing cached applies to this kid.
		return nil, ErrJWKSUnavailable.withCause(st.err)
	}
	return nil, errUnknownKID(kid)
}

func fitting(k jwk, alg string) ([]any, *Error) {
	if !k.fits(alg) {
		return nil, ErrInvalidSignature
	}
	return []any{k.key}, nil
}

func (s jwksState) find(kid string) (jwk, bool) {
	for _, k := range s.keys {
		if k.kid == kid {
			return k, true
		}
	}
	return jwk{}, false
}

// allowKIDRefetch records a refetch for kid and reports whether one is
// allowed, that is whether none happened for it in the last 30 s.
func (c *jwksCache) allowKIDRefetch(kid string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if t, ok := c.kidTries[kid]; ok && now.Sub(t) < kidRefetchInterval {
		return false
	}
	if len(c.kidTries) >= maxKIDTries {
		for k, t := range c.kidTries {
			if now.Sub(t) >= kidRefetchInterval {
				delete(c.kidTries, k)
			}
		}
	}
	c.kidTries[kid] = now
	return true
}

// fetch downloads the key set unless another fetch finished since the caller
// looked at generation seen; in that case the caller shares its outcome. A
// failed fetch keeps the previous keys, which stay usable.
func (c *jwksCache) fetch(ctx context.Context, seen uint64) jwksState {
	c.fetchMu.Lock()
	defer c.fetchMu.Unlock()
	if st := c.state(); st.gen != seen {
		return st
	}
	keys, err := c.download(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.st.gen++
	if err != nil {
		c.st.failedAt, c.st.err = c.now(), err
	} else {
		c.st.keys, c.st.fetchedAt, c.st.failedAt, c.st.err = keys, c.now(), time.Time{}, nil
	}
	return c.st
}

// download performs one GET of the JWKS. The client's own cancellation is
// ignored: the fetch is shared, and one impatient client must not fail it for
// the others waiting on it.
func (c *jwksCache) download(ctx context.Context) ([]jwk, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("JWKS endpoint answered %s", resp.Status)
	}
	var doc struct {
		Keys []rawJWK `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxJWKSBytes)).Decode(&doc); err != nil {
		return nil, fmt.Errorf("JWKS document: %w", err)
	}
	keys := make([]jwk, 0, len(doc.Keys))
	for _, r := range doc.Keys {
		if k, ok := parseJWK(r); ok {
			keys = append(keys, k)
		}
	}
	return keys, nil
}
