package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/internal/auth"
)

// GET /api/v1/auth/me (docs/api/admin-api.md §13, dashboard M1): who the caller is, for the
// dashboard's token dialog and auth chip. The browser cannot work out the level itself, since
// roles depend on the JWT_ROLES_* settings. The route is public, so the middleware lets every
// request through; the handler verifies a sent token itself, whatever JWT_SKIP_PATHS says.

// authMeJSON is the answer of GET /api/v1/auth/me.
type authMeJSON struct {
	AuthEnabled   bool     `json:"authEnabled"`
	Authenticated bool     `json:"authenticated"`
	Sub           *string  `json:"sub"`
	Roles         []string `json:"roles"`
	Level         string   `json:"level"`
	ExpiresAt     msTime   `json:"expiresAt"`
	// Tenant is the token's tenant (docs/api/concepts.md §14), absent for the default tenant
	// (and with authentication off), so a broker of one tenant answers as it always did.
	Tenant string `json:"tenant,omitempty"`
	// Operator is present, true, for a token of the operator role, which reads every tenant.
	Operator bool `json:"operator,omitempty"`
}

func (s *Server) registerAuthMe(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/auth/me", LevelPublic, s.authMe)
}

func (s *Server) authMe(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	out := authMeJSON{Roles: []string{}}
	v := s.cfg.Auth
	switch _, sent := r.Header["Authorization"]; {
	case v == nil: // every route is open; a sent token is ignored
		out.Level = "admin"
	case !sent:
		out.AuthEnabled, out.Level = true, "public"
	default:
		id, err := v.VerifyRequest(r)
		if err != nil {
			rejectUnauthenticated(w, r, err, s.log)
			return
		}
		out.AuthEnabled, out.Authenticated = true, true
		out.Sub = id.ProducerSub()
		out.Roles = append(out.Roles, id.Roles...)
		out.Level = accessLevel(id.Access)
		out.Tenant, out.Operator = id.Tenant, id.Operator
		if id.ExpiresAt != nil {
			out.ExpiresAt = msTime(*id.ExpiresAt)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// accessLevel names the level a token's roles reach as §13 does: public when none is known.
func accessLevel(a auth.Access) string {
	if a == auth.AccessNone {
		return "public"
	}
	return a.String()
}
