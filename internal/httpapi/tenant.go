package httpapi

import (
	"net/http"

	"github.com/queen-go/queen/internal/auth"
	"github.com/queen-go/queen/internal/tenant"
)

// OperatorTenantHeader lets an operator token (JWT_ROLE_OPERATOR) narrow its read to one
// tenant, for addressing a queue by name when two tenants have one of that name.
const OperatorTenantHeader = "Queen-Tenant"

// textOperatorReadOnly answers a write by an operator token.
const textOperatorReadOnly = "The operator role is read-only"

// scopeTenant puts the request's tenant scope on its context (docs/api/concepts.md §14), where
// the broker, the read side and the store find it: the token's tenant claim, the default
// tenant without one or without authentication; every tenant for an operator token's reads.
// It runs after authentication, on every matched route, so no handler runs unscoped.
func scopeTenant(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _ := auth.FromContext(r.Context())
		ctx := tenant.With(r.Context(), id.Tenant)
		if id.Operator {
			// Pops are GETs that lease: read-write routes are writes whatever their method.
			if r.Method != http.MethodGet && r.Method != http.MethodHead || RouteLevel(r) == LevelReadWrite {
				discardBody(r)
				writeError(w, http.StatusForbidden, textOperatorReadOnly)
				return
			}
			ctx = tenant.WithAll(r.Context())
			if t := r.Header.Get(OperatorTenantHeader); t != "" {
				if tenant.Valid(t) != nil {
					writeError(w, http.StatusBadRequest, "Invalid "+OperatorTenantHeader+" header")
					return
				}
				ctx = tenant.With(r.Context(), t)
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
