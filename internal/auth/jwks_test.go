package auth

import (
	"context"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// jwksServer serves a key set the test can change, fail or slow down.
type jwksServer struct {
	*httptest.Server
	hits  atomic.Int64
	mu    sync.Mutex
	keys  []map[string]string
	fail  bool
	delay time.Duration
}

func newJWKSServer(t *testing.T, keys ...map[string]string) *jwksServer {
	s := &jwksServer{keys: keys}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		s.mu.Lock()
		keys, fail, delay := s.keys, s.fail, s.delay
		s.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				return
			}
		}
		if fail {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": keys})
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *jwksServer) set(fail bool, keys ...map[string]string) {
	s.mu.Lock()
	s.fail = fail
	if keys != nil {
		s.keys = keys
	}
	s.mu.Unlock()
}

func (s *jwksServer) setDelay(d time.Duration) {
	s.mu.Lock()
	s.delay = d
	s.mu.Unlock()
}

func (s *jwksServer) wantHits(t *testing.T, n int64) {
	t.Helper()
	if got := s.hits.Load(); got != n {
		t.Fatalf("JWKS fetched %d times, want %d", got, n)
	}
}

func rsaJWK(kid, alg string, k *rsa.PublicKey) map[string]string {
	enc := base64.RawURLEncoding.EncodeToString
	m := map[string]string{"kty": "RSA", "kid": kid, "use": "sig", "n": enc(k.N.Bytes()), "e": enc(big.NewInt(int64(k.E)).Bytes())}
	if alg != "" {
		m["alg"] = alg
	}
	return m
}

func edJWK(kid string, k ed25519.PublicKey) map[string]string {
	return map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": kid, "x": base64.RawURLEncoding.EncodeToString(k)}
}

func jwksVerifier(t *testing.T, alg, url string) (*Verifier, *clock) {
	return newVerifier(t, Config{Algorithm: alg, JWKSURL: url, JWKSRefreshInterval: time.Hour, JWKSTimeout: 2 * time.Second})
}

func TestVerifierJWKSRotationAndUnknownKID(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, rsaJWK("k1", "RS256", &rsaKey.PublicKey),
		map[string]string{"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"}, // skipped, not fatal
		map[string]string{"kty": "RSA", "kid": "enc", "use": "enc", "n": "AQAB", "e": "AQAB"})
	v, clk := jwksVerifier(t, "RS256", srv.URL)
	c := jwt.MapClaims{"sub": "jwks-user", "role": "read-write"}

	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "k1", c))
	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "k1", c))
	srv.wantHits(t, 1) // cached

	// Rotation: k2 appears at the endpoint; the first token naming it triggers a refetch.
	srv.set(false, rsaJWK("k1", "RS256", &rsaKey.PublicKey), rsaJWK("k2", "", &rsaKey2.PublicKey))
	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey2, "k2", c))
	srv.wantHits(t, 2)

	// A kid nobody publishes: one refetch, then the answer; no refetch for 30 s.
	bogus := sign(t, jwt.SigningMethodRS256, rsaKey, "nope", c)
	verifyErr(t, v, bogus, unauthorized, "Unknown key ID: nope")
	srv.wantHits(t, 3)
	verifyErr(t, v, bogus, unauthorized, "Unknown key ID: nope")
	clk.Advance(29 * time.Second)
	verifyErr(t, v, bogus, unauthorized, "Unknown key ID: nope")
	srv.wantHits(t, 3)
	// The limit is per kid: another unknown kid may still refetch.
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "other", c), unauthorized, "Unknown key ID: other")
	srv.wantHits(t, 4)
	clk.Advance(2 * time.Second)
	verifyErr(t, v, bogus, unauthorized, "Unknown key ID: nope")
	srv.wantHits(t, 5)

	// A key whose own alg differs from the token's, and the wrong key for a kid.
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "k2", c), unauthorized, "Invalid token signature")
	v384, _ := jwksVerifier(t, "RS384", srv.URL)
	verifyErr(t, v384, sign(t, jwt.SigningMethodRS384, rsaKey, "k1", c), unauthorized, "Invalid token signature")
	verifyOK(t, v384, sign(t, jwt.SigningMethodRS384, rsaKey2, "k2", c))
}

func TestVerifierJWKSRefreshInterval(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, rsaJWK("k1", "", &rsaKey.PublicKey))
	v, clk := jwksVerifier(t, "RS256", srv.URL)
	tok := sign(t, jwt.SigningMethodRS256, rsaKey, "k1", jwt.MapClaims{})
	verifyOK(t, v, tok)
	clk.Advance(59 * time.Minute)
	verifyOK(t, v, tok)
	srv.wantHits(t, 1)
	clk.Advance(time.Minute)
	verifyOK(t, v, tok)
	srv.wantHits(t, 2)

	// A refresh that fails keeps the cached keys in use.
	srv.set(true)
	clk.Advance(time.Hour)
	verifyOK(t, v, tok)
	srv.wantHits(t, 3)
	// ... and an unknown kid then cannot be resolved: 500.
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "k9", jwt.MapClaims{}), http.StatusInternalServerError, "Failed to fetch JWKS")
	// Failed fetches are not retried on every request.
	verifyOK(t, v, tok)
	srv.wantHits(t, 3)
	srv.set(false)
	clk.Advance(failureBackoff)
	verifyOK(t, v, tok)
	srv.wantHits(t, 4)
}

func TestVerifierJWKSUnavailable(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t)
	srv.set(true)
	v, clk := jwksVerifier(t, "RS256", srv.URL)
	tok := sign(t, jwt.SigningMethodRS256, rsaKey, "k1", jwt.MapClaims{})
	verifyErr(t, v, tok, http.StatusInternalServerError, "Failed to fetch JWKS")
	srv.set(false, rsaJWK("k1", "", &rsaKey.PublicKey))
	clk.Advance(failureBackoff)
	verifyOK(t, v, tok)

	// Malformed documents and unreachable endpoints are fetch failures too.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>")) }))
	defer bad.Close()
	vb, _ := jwksVerifier(t, "RS256", bad.URL)
	verifyErr(t, vb, tok, http.StatusInternalServerError, "Failed to fetch JWKS")
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	vc, _ := jwksVerifier(t, "RS256", closed.URL)
	verifyErr(t, vc, tok, http.StatusInternalServerError, "Failed to fetch JWKS")
}

func TestVerifierJWKSTimeout(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, rsaJWK("k1", "", &rsaKey.PublicKey))
	srv.setDelay(2 * time.Second)
	v, err := New(Config{Algorithm: "RS256", JWKSURL: srv.URL, JWKSTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	verifyErr(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "k1", jwt.MapClaims{}), http.StatusInternalServerError, "Failed to fetch JWKS")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("fetch took %v despite a 100 ms timeout", d)
	}
}

func TestVerifierJWKSEdDSAAndAuto(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, edJWK("ed1", edKey.Public().(ed25519.PublicKey)), rsaJWK("rs1", "", &rsaKey.PublicKey))
	v, _ := jwksVerifier(t, "EdDSA", srv.URL)
	c := jwt.MapClaims{"sub": "ed-user", "roles": []string{"read-only"}}
	if id := verifyOK(t, v, sign(t, jwt.SigningMethodEdDSA, edKey, "ed1", c)); id.Subject != "ed-user" || id.Access != AccessReadOnly {
		t.Fatalf("identity %+v", id)
	}
	// An RSA key under an EdDSA token's kid cannot verify it.
	verifyErr(t, v, sign(t, jwt.SigningMethodEdDSA, edKey, "rs1", c), unauthorized, "Invalid token signature")
	// Without a kid every fitting key is tried.
	verifyOK(t, v, sign(t, jwt.SigningMethodEdDSA, edKey, "", c))

	auto, _ := jwksVerifier(t, "auto", srv.URL)
	verifyOK(t, auto, sign(t, jwt.SigningMethodEdDSA, edKey, "ed1", c))
	verifyOK(t, auto, sign(t, jwt.SigningMethodRS512, rsaKey, "rs1", c))
	verifyOK(t, auto, sign(t, jwt.SigningMethodRS256, rsaKey, "", c))
	verifyErr(t, auto, sign(t, jwt.SigningMethodRS256, rsaKey2, "", c), unauthorized, "Invalid token signature")
	verifyErr(t, auto, sign(t, jwt.SigningMethodHS256, hsKey, "", c), unauthorized, "Token uses HS256, expected auto")
}

func TestVerifierJWKSWithPEMFallback(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, rsaJWK("k2", "", &rsaKey2.PublicKey))
	v, _ := newVerifier(t, Config{Algorithm: "RS256", JWKSURL: srv.URL, PublicKey: pkixPEM(t, &rsaKey.PublicKey)})
	// No kid: the PEM key, without touching the endpoint.
	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey, "", jwt.MapClaims{}))
	srv.wantHits(t, 0)
	// With a kid: the JWKS.
	verifyOK(t, v, sign(t, jwt.SigningMethodRS256, rsaKey2, "k2", jwt.MapClaims{}))
	srv.wantHits(t, 1)
}

func TestVerifierJWKSConcurrentFirstUseSharesOneFetch(t *testing.T) {
	testKeys(t)
	srv := newJWKSServer(t, rsaJWK("k1", "", &rsaKey.PublicKey))
	srv.setDelay(100 * time.Millisecond)
	v, _ := jwksVerifier(t, "RS256", srv.URL)
	tok := sign(t, jwt.SigningMethodRS256, rsaKey, "k1", jwt.MapClaims{})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, err := v.Verify(context.Background(), tok); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	srv.wantHits(t, 1)
}
