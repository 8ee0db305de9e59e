package httpapi

import (
	"encoding/json"
	"math"
	"net/http"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

type extendResultJSON struct {
	Index     int     `json:"index"`
	LeaseID   string  `json:"leaseId"`
	Success   bool    `json:"success"`
	Error     *string `json:"error"`
	ExpiresAt *string `json:"expiresAt"`
}

func (s *Server) extendLease(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	seconds, msg := parseExtendSeconds(body)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return
	}
	lease := PathParam(r, "leaseId")
	res := extendResultJSON{LeaseID: lease}
	state := mq.LeaseNotFound
	var exp time.Time
	if mq.CanonicalUUID(lease) != "" {
		var err error
		exp, state, err = s.data.ExtendLease(r.Context(), lease, seconds)
		if err != nil {
			s.fail(w, r, err)
			return
		}
	}
	switch state {
	case mq.LeaseExtended:
		at := formatMilli(exp)
		res.Success, res.ExpiresAt = true, &at
	case mq.LeaseExpired:
		e := "Lease already expired"
		res.Error = &e
	default:
		e := "Lease not found"
		res.Error = &e
	}
	writeJSON(w, http.StatusOK, []extendResultJSON{res})
}

// parseExtendSeconds reads {"seconds":N}; an empty body or {} means 60 (docs/api/data-api.md §6).
func parseExtendSeconds(body []byte) (int, string) {
	const bad = "seconds must be a positive integer"
	raw := json.RawMessage(body)
	if jsonKind(raw) == 0 {
		return 60, ""
	}
	var obj struct {
		Seconds json.RawMessage `json:"seconds"`
	}
	if !json.Valid(body) {
		var v any
		return 0, "Invalid JSON: " + json.Unmarshal(body, &v).Error()
	}
	if !isObject(raw) || json.Unmarshal(body, &obj) != nil {
		return 0, bad
	}
	if isNull(obj.Seconds) {
		return 60, ""
	}
	var f float64
	if json.Unmarshal(obj.Seconds, &f) != nil || f < 1 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, bad
	}
	return int(f), ""
}
