package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// Limits stores the tenants' limits (*broker.Broker; docs/api/concepts.md §14): read from the
// database, and changed for every instance.
type Limits interface {
	TenantLimits(ctx context.Context, name string) (mq.TenantLimits, error)
	SetTenantLimits(ctx context.Context, name string, l mq.TenantLimits, by *string) error
}

// textLimitsForbidden answers a tenant's token that addresses the limits it may not.
const textLimitsForbidden = "Tenant limits are set by the broker's administrators"

// registerTenantLimits adds GET and PUT /api/v1/system/tenants/:tenant/limits, admin level.
func (s *Server) registerTenantLimits(r *Router) {
	r.Handle(http.MethodGet, "/api/v1/system/tenants/:tenant/limits", LevelAdmin, s.getTenantLimits)
	r.Handle(http.MethodPut, "/api/v1/system/tenants/:tenant/limits", LevelAdmin, s.putTenantLimits)
}

// tenantLimitsJSON is both routes' answer.
type tenantLimitsJSON struct {
	Tenant string `json:"tenant"`
	mq.TenantLimits
}

// limitsTenant reads the path's tenant and checks that the caller may address it: the broker's
// administrators (tokens of the default tenant) and, to read, the operator and the tenant itself.
func (s *Server) limitsTenant(w http.ResponseWriter, r *http.Request, write bool) (string, bool) {
	name := PathParam(r, "tenant")
	if tenant.Valid(name) != nil {
		writeError(w, http.StatusBadRequest, "Invalid tenant name")
		return "", false
	}
	if s.cfg.Limits == nil {
		writeError(w, http.StatusServiceUnavailable, mq.TextUnavailable)
		return "", false
	}
	caller, all := tenant.Of(r.Context())
	if !(caller == tenant.Default && !all || !write && (all || caller == name)) {
		writeError(w, http.StatusForbidden, textLimitsForbidden)
		return "", false
	}
	return name, true
}

// getTenantLimits serves GET /api/v1/system/tenants/:tenant/limits: null for a limit not set.
func (s *Server) getTenantLimits(w http.ResponseWriter, r *http.Request) {
	name, ok := s.limitsTenant(w, r, false)
	if !ok {
		return
	}
	l, err := s.cfg.Limits.TenantLimits(r.Context(), name)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tenantLimitsJSON{Tenant: name, TenantLimits: l})
}

// putTenantLimits serves PUT /api/v1/system/tenants/:tenant/limits: the body replaces every
// limit (a missing or null field is no limit of that kind); it holds for the next write of
// every instance, and within a second for the push rate of the others.
func (s *Server) putTenantLimits(w http.ResponseWriter, r *http.Request) {
	name, ok := s.limitsTenant(w, r, true)
	if !ok {
		discardBody(r)
		return
	}
	var body map[string]json.RawMessage
	if !readJSON(w, r, &body) {
		return
	}
	var l mq.TenantLimits
	for _, f := range []struct {
		key string
		dst **int64
		max int64
	}{{"maxQueues", &l.MaxQueues, math.MaxInt32}, {"maxMessages", &l.MaxMessages, math.MaxInt64}, {"pushRate", &l.PushRate, math.MaxInt32}} {
		raw, present := body[f.key]
		if !present || bytes.Equal(raw, []byte("null")) {
			continue
		}
		n, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || n < 0 || n > f.max {
			writeError(w, http.StatusBadRequest, f.key+" must be null or an integer from 0 to "+strconv.FormatInt(f.max, 10))
			return
		}
		*f.dst = &n
	}
	if err := s.cfg.Limits.SetTenantLimits(r.Context(), name, l, producerSub(r)); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, tenantLimitsJSON{Tenant: name, TenantLimits: l})
}

// limitRefused answers a request refused by a tenant limit: 429 with Retry-After and the
// limit's name (docs/api/concepts.md §14).
func limitRefused(w http.ResponseWriter, err error) bool {
	var le *mq.LimitError
	if !errors.As(err, &le) {
		return false
	}
	w.Header().Set("Retry-After", strconv.FormatInt(le.RetryAfterSeconds(), 10))
	writeError(w, http.StatusTooManyRequests, le.Error())
	return true
}
