package httpapi_test

// The authentication middleware on its own, through a small router (no database).

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/httpapi"
)

// TestAuthMiddlewareLevels drives the middleware through a small router, covering the admin
// level, which no registered route uses yet, and checks what the handler sees.
func TestAuthMiddlewareLevels(t *testing.T) {
	t.Parallel()
	v, err := auth.New(auth.Config{Algorithm: "HS256", Secret: authSecret})
	if err != nil {
		t.Fatal(err)
	}
	r := httpapi.NewRouter()
	r.Use(httpapi.AuthMiddleware(v, slog.New(slog.DiscardHandler)))
	seen := ""
	h := func(w http.ResponseWriter, req *http.Request) {
		id, _ := auth.FromContext(req.Context())
		seen = id.Subject
		w.WriteHeader(http.StatusOK)
	}
	r.Handle("GET", "/public", httpapi.LevelPublic, h)
	r.Handle("GET", "/ro", httpapi.LevelReadOnly, h)
	r.Handle("POST", "/rw", httpapi.LevelReadWrite, h)
	r.Handle("DELETE", "/admin", httpapi.LevelAdmin, h)

	routes := []struct{ method, path string }{{"GET", "/public"}, {"GET", "/ro"}, {"POST", "/rw"}, {"DELETE", "/admin"}}
	want := map[string][4]int{
		"":           {200, 401, 401, 401},
		"none":       {200, 403, 403, 403},
		"read-only":  {200, 200, 403, 403},
		"read-write": {200, 200, 200, 403},
		"admin":      {200, 200, 200, 200},
	}
	for role, codes := range want {
		for i, rt := range routes {
			req := httptest.NewRequest(rt.method, rt.path, strings.NewReader("{broken"))
			if role != "" {
				req.Header.Set("Authorization", "Bearer "+authToken(t, jwt.MapClaims{"sub": "s-" + role, "roles": []string{role}}))
			}
			seen = "-"
			rec := httptest.NewRecorder()
			r.ServeHTTP(rec, req)
			if rec.Code != codes[i] {
				t.Errorf("%s %s as %q: %d %s, want %d", rt.method, rt.path, role, rec.Code, rec.Body, codes[i])
			}
			switch {
			case rec.Code != 200 && seen != "-":
				t.Errorf("%s %s as %q: handler ran on a rejection", rt.method, rt.path, role)
			case rec.Code == 200 && rt.path != "/public" && seen != "s-"+role:
				t.Errorf("%s %s as %q: handler saw subject %q", rt.method, rt.path, role, seen)
			}
		}
	}
}
