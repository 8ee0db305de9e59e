package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/testserver"
)

// GET /api/v1/auth/me (docs/api/admin-api.md §13, dashboard M1).

func TestAuthMeOff(t *testing.T) {
	b := setup(t, testserver.Options{})
	for _, authz := range []*string{nil, bearer("garbage")} { // a sent token is ignored
		resp, body := authSend(t, "GET", b.srv.URL+"/api/v1/auth/me", authz, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" ||
			!admSameJSON(body, []byte(`{"authEnabled":false,"authenticated":false,"sub":null,"roles":[],"level":"admin","expiresAt":null}`)) {
			t.Fatalf("auth off: %d %v %s", resp.StatusCode, resp.Header, body)
		}
	}
}

func TestAuthMeOn(t *testing.T) {
	// "/" in the skip paths must not let /api/v1/auth/me skip verifying a sent token.
	b := authSetup(t, testserver.Options{Auth: &auth.Config{Algorithm: "HS256", Secret: authSecret,
		RolesClaim: "role", RolesArrayClaim: "roles", ClockSkew: 30 * time.Second,
		SkipPaths: append([]string{"/api/v1/auth/me"}, auth.DefaultSkipPaths...)}})
	me := b.srv.URL + "/api/v1/auth/me"

	resp, body := authSend(t, "GET", me, nil, nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" ||
		!admSameJSON(body, []byte(`{"authEnabled":true,"authenticated":false,"sub":null,"roles":[],"level":"public","expiresAt":null}`)) {
		t.Fatalf("no header: %d %s", resp.StatusCode, body)
	}
	exp := time.Date(2099, 4, 26, 11, 59, 28, 0, time.UTC)
	for _, c := range []struct {
		claims jwt.MapClaims
		want   string
	}{
		{jwt.MapClaims{"sub": "alice", "role": "read-write", "exp": exp.Unix()},
			`{"authEnabled":true,"authenticated":true,"sub":"alice","roles":["read-write"],"level":"read-write","expiresAt":"2099-04-26T11:59:28.000Z"}`},
		// Both claims, deduplicated, string claim first; unknown roles kept; the highest level wins.
		{jwt.MapClaims{"sub": "bob", "role": "read-only", "roles": []any{"ops", "admin", "read-only"}},
			`{"authEnabled":true,"authenticated":true,"sub":"bob","roles":["read-only","ops","admin"],"level":"admin","expiresAt":null}`},
		{jwt.MapClaims{"roles": []any{"ops"}, "email": "x@y"}, // no sub, no known role; other claims not echoed
			`{"authEnabled":true,"authenticated":true,"sub":null,"roles":["ops"],"level":"public","expiresAt":null}`},
		// A tenant's token names its tenant (docs/api/concepts.md §14); the operator is marked.
		{jwt.MapClaims{"sub": "tb", "role": "read-write", "tenant": "team-b"},
			`{"authEnabled":true,"authenticated":true,"sub":"tb","roles":["read-write"],"level":"read-write","expiresAt":null,"tenant":"team-b"}`},
		{jwt.MapClaims{"sub": "op", "roles": []any{"operator", "read-only"}},
			`{"authEnabled":true,"authenticated":true,"sub":"op","roles":["operator","read-only"],"level":"read-only","expiresAt":null,"operator":true}`},
		{jwt.MapClaims{"sub": "ro", "role": "read-only"},
			`{"authEnabled":true,"authenticated":true,"sub":"ro","roles":["read-only"],"level":"read-only","expiresAt":null}`},
	} {
		resp, body := authSend(t, "GET", me, bearer(authToken(t, c.claims)), nil)
		if resp.StatusCode != http.StatusOK || !admSameJSON(body, []byte(c.want)) {
			t.Fatalf("%v: %d %s, want %s", c.claims, resp.StatusCode, body, c.want)
		}
	}
	expired := authToken(t, jwt.MapClaims{"sub": "old", "role": "admin", "exp": time.Now().Add(-time.Hour).Unix()})
	for authz, msg := range map[string]string{
		"":                  "Empty token",
		"Bearer ":           "Empty token",
		"Bearer not.a.jwt":  "Invalid token",
		"Bearer " + expired: "Token has expired",
		"Bearer " + authToken(t, jwt.MapClaims{"sub": "x"})[:20]: "Invalid token",
	} {
		resp, body := authSend(t, "GET", me, &authz, nil)
		authWant(t, resp, body, http.StatusUnauthorized, msg)
	}
}
