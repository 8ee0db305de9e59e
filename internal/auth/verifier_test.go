package auth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var hsKey = []byte("test-secret")

func hsVerifier(t *testing.T, mod func(*Config)) (*Verifier, *clock) {
	c := Config{Algorithm: "HS256", Secret: string(hsKey), ClockSkew: 30 * time.Second}
	if mod != nil {
		mod(&c)
	}
	return newVerifier(t, c)
}

func hs(t *testing.T, claims jwt.MapClaims) string {
	return sign(t, jwt.SigningMethodHS256, hsKey, "", claims)
}

func TestVerifierHeaderForms(t *testing.T) {
	v, _ := hsVerifier(t, nil)
	tok := hs(t, jwt.MapClaims{"sub": "alice", "role": "read-write"})
	for _, h := range []string{"Bearer " + tok, "bearer " + tok, "BEARER  " + tok, tok, " Bearer\t" + tok + " "} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", h)
		id, err := v.VerifyRequest(r)
		if err != nil || id.Subject != "alice" || id.Access != AccessReadWrite {
			t.Fatalf("header %q: %+v %v", h, id, err)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	_, err := v.VerifyRequest(r)
	wantErr(t, err, unauthorized, "Authentication required")
	if !errors.Is(err, ErrAuthRequired) {
		t.Fatal("errors.Is(ErrAuthRequired) failed")
	}
	for _, h := range []string{"", "Bearer", "Bearer ", "bearer   "} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["Authorization"] = []string{h}
		_, err := v.VerifyRequest(r)
		wantErr(t, err, unauthorized, "Empty token")
	}
}

func TestVerifierMessages(t *testing.T) {
	v, _ := hsVerifier(t, func(c *Config) { c.Issuer, c.Audience = "queen-idp", "queen" })
	ok := jwt.MapClaims{"sub": "s", "iss": "queen-idp", "aud": "queen"}
	with := func(k string, val any) jwt.MapClaims {
		c := jwt.MapClaims{}
		for kk, vv := range ok {
			c[kk] = vv
		}
		if val == nil {
			delete(c, k)
		} else {
			c[k] = val
		}
		return c
	}
	good := hs(t, ok)
	parts := strings.Split(good, ".")
	b64 := base64.RawURLEncoding.EncodeToString
	tampered := parts[0] + "." + b64([]byte(`{"sub":"mallory","iss":"queen-idp","aud":"queen"}`)) + "." + parts[2]
	unsigned := func(header string) string { return b64([]byte(header)) + "." + parts[1] + "." + parts[2] }

	tests := []struct {
		name, token, msg string
	}{
		{"not a JWT", "abc", "Invalid token"},
		{"two segments", parts[0] + "." + parts[1], "Invalid token"},
		{"four segments", good + ".x", "Invalid token"},
		{"bad base64", "!!!." + parts[1] + "." + parts[2], "Invalid token"},
		{"header not JSON", b64([]byte("nope")) + "." + parts[1] + "." + parts[2], "Invalid token"},
		{"claims not JSON", parts[0] + "." + b64([]byte("[1")) + "." + parts[2], "Invalid token"},
		{"no alg", unsigned(`{"typ":"JWT"}`), "Invalid token"},
		{"exp wrong type", hs(t, with("exp", "tomorrow")), "Invalid token"},
		{"wrong secret", sign(t, jwt.SigningMethodHS256, []byte("other"), "", ok), "Invalid token signature"},
		{"tampered claims", tampered, "Invalid token signature"},
		{"expired", hs(t, with("exp", t0.Add(-31*time.Second).Unix())), "Token has expired"},
		{"not yet valid", hs(t, with("nbf", t0.Add(31*time.Second).Unix())), "Token not yet valid"},
		{"wrong issuer", hs(t, with("iss", "evil")), "Invalid token issuer"},
		{"missing issuer", hs(t, with("iss", nil)), "Invalid token issuer"},
		{"wrong audience", hs(t, with("aud", []string{"a", "b"})), "Invalid token audience"},
		{"missing audience", hs(t, with("aud", nil)), "Invalid token audience"},
		{"RS256 token", unsigned(`{"alg":"RS256"}`), "Token uses RS256, expected HS256"},
		{"alg none", unsigned(`{"alg":"none"}`), "Token uses none, expected HS256"},
		{"alg unknown to the library", unsigned(`{"alg":"XS999"}`), "Token uses XS999, expected HS256"},
		{"HS384 token", sign(t, jwt.SigningMethodHS384, hsKey, "", ok), "Token uses HS384, expected HS256"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { verifyErr(t, v, tc.token, unauthorized, tc.msg) })
	}
	verifyErr(t, v, "", unauthorized, "Empty token")
	// Signature problems win over claim problems: a forged token learns nothing.
	verifyErr(t, v, sign(t, jwt.SigningMethodHS256, []byte("x"), "", with("exp", t0.Add(-time.Hour).Unix())),
		unauthorized, "Invalid token signature")

	// Inside the skew, and with aud as an array that contains the audience.
	verifyOK(t, v, hs(t, with("exp", t0.Add(-29*time.Second).Unix())))
	verifyOK(t, v, hs(t, with("nbf", t0.Add(29*time.Second).Unix())))
	verifyOK(t, v, hs(t, with("aud", []string{"x", "queen"})))
	verifyOK(t, v, good)
}

func TestVerifierClockSkewZero(t *testing.T) {
	v, clk := hsVerifier(t, func(c *Config) { c.ClockSkew = 0 })
	tok := hs(t, jwt.MapClaims{"exp": t0.Add(time.Second).Unix(), "nbf": t0.Unix()})
	verifyOK(t, v, tok)
	clk.Advance(time.Second)
	verifyErr(t, v, tok, unauthorized, "Token has expired")
}

func TestVerifierRoles(t *testing.T) {
	v, _ := hsVerifier(t, nil)
	tests := []struct {
		claims jwt.MapClaims
		roles  []string
		access Access
	}{
		{jwt.MapClaims{}, nil, AccessNone},
		{jwt.MapClaims{"role": "read-only"}, []string{"read-only"}, AccessReadOnly},
		{jwt.MapClaims{"roles": []string{"read-write"}}, []string{"read-write"}, AccessReadWrite},
		{jwt.MapClaims{"role": "read-only", "roles": []any{"admin", 7, "read-only"}}, []string{"read-only", "admin"}, AccessAdmin},
		{jwt.MapClaims{"role": "Admin", "roles": []string{"writer"}}, []string{"Admin", "writer"}, AccessNone},
		{jwt.MapClaims{"role": 42}, nil, AccessNone},
	}
	for _, tc := range tests {
		id := verifyOK(t, v, hs(t, tc.claims))
		if !slices.Equal(id.Roles, tc.roles) || id.Access != tc.access {
			t.Errorf("%v: roles %v access %v, want %v %v", tc.claims, id.Roles, id.Access, tc.roles, tc.access)
		}
	}

	custom, _ := hsVerifier(t, func(c *Config) {
		c.RolesClaim, c.RolesArrayClaim = "grp", "groups"
		c.RoleAdmin, c.RoleReadWrite, c.RoleReadOnly = "boss", "writer", "reader"
	})
	for claims, want := range map[string]Access{
		`grp=writer`: AccessReadWrite, `groups=reader`: AccessReadOnly, `groups=boss`: AccessAdmin, `role=admin`: AccessNone,
	} {
		k, val, _ := strings.Cut(claims, "=")
		c := jwt.MapClaims{k: val}
		if k == "groups" {
			c[k] = []string{val}
		}
		if id := verifyOK(t, custom, hs(t, c)); id.Access != want {
			t.Errorf("%s: access %v, want %v", claims, id.Access, want)
		}
	}
}

func TestVerifierSubject(t *testing.T) {
	v, _ := hsVerifier(t, nil)
	id := verifyOK(t, v, hs(t, jwt.MapClaims{"sub": "svc-orders"}))
	if p := id.ProducerSub(); p == nil || *p != "svc-orders" {
		t.Fatalf("producerSub %v", p)
	}
	for _, c := range []jwt.MapClaims{{}, {"sub": ""}, {"sub": 5}} {
		if p := verifyOK(t, v, hs(t, c)).ProducerSub(); p != nil {
			t.Fatalf("%v: producerSub %q, want nil", c, *p)
		}
	}
	ctx := NewContext(context.Background(), id)
	if got, ok := FromContext(ctx); !ok || got.Subject != "svc-orders" {
		t.Fatalf("FromContext %+v %v", got, ok)
	}
	if _, ok := FromContext(context.Background()); ok {
		t.Fatal("FromContext on an empty context")
	}
}

func TestVerifierSkipped(t *testing.T) {
	v, _ := hsVerifier(t, func(c *Config) { c.SkipPaths = append([]string{"/api/v1/status/", "/exact"}, DefaultSkipPaths...) })
	for path, want := range map[string]bool{
		"/health": true, "/metrics": true, "/metrics/prometheus": true, "/": true,
		"/exact": true, "/exact/": false, "/exactly": false,
		"/api/v1/status/": true, "/api/v1/status/queues": true, "/api/v1/status/queues/q": true,
		"/api/v1/status": false, "/api/v1/push": false, "/healthz": false,
	} {
		if got := v.Skipped(path); got != want {
			t.Errorf("Skipped(%q) = %v, want %v", path, got, want)
		}
	}
}

func TestVerifierNewRejectsMissingKeys(t *testing.T) {
	for _, c := range []Config{
		{Algorithm: "HS256"},
		{Algorithm: "RS256", Secret: "s"},
		{Algorithm: "EdDSA"},
		{Algorithm: "auto"},
		{Algorithm: "ES256", Secret: "s"},
		{Algorithm: "RS256", JWKSURL: "ftp://keys"},
		{Algorithm: "RS256", PublicKey: "not pem"},
	} {
		if _, err := New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
	if v, err := New(Config{Secret: "s"}); err != nil || v.cfg.Algorithm != "HS256" || v.cfg.RoleAdmin != "admin" {
		t.Fatalf("defaults: %v %+v", err, v)
	}
}

func TestVerifierErrorIs(t *testing.T) {
	e := ErrJWKSUnavailable.withCause(errors.New("dial tcp: refused"))
	if !errors.Is(e, ErrJWKSUnavailable) || errors.Is(e, ErrInvalidToken) || e.Status != http.StatusInternalServerError {
		t.Fatalf("errors.Is on %v", e)
	}
	if e.Message != "Failed to fetch JWKS" {
		t.Fatalf("message %q", e.Message)
	}
}
