package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Input limits (docs/api/README.md §2.9). Nothing a client sends may reach the database in a form
// PostgreSQL refuses (invalid UTF-8, U+0000, an integer beyond int4, an index row too large),
// because each of those came back as a 500. The checks here run at the edge, before any
// lookup, and answer with the reference's exact 400.

// Integer query parameter maxima (docs/api/README.md §2.9): a larger value is the maximum.
const (
	maxPopBatch      = 10_000
	maxPopPartitions = 1_000
	maxPopTimeoutMs  = 120_000
	maxListOffset    = 1_000_000
	maxMinLagSeconds = 2_147_483_647
)

// maxReasonChars is the longest free-text reason stored (an ack's error); longer ones are cut.
const maxReasonChars = 4096

// msgInvalidUTF8 answers a path segment or query parameter that is not UTF-8.
const msgInvalidUTF8 = "Invalid UTF-8 in request"

// pathNameLimits names the length message of each path parameter that carries a name; the
// other parameters (partitionId, leaseId, dlqId) are ids that match nothing unless they are
// UUIDs, so they need no limit of their own.
var pathNameLimits = map[string]string{
	"queue":         "queue exceeds 255 characters",
	"partition":     "partition exceeds 255 characters",
	"group":         "consumerGroup exceeds 255 characters",
	"transactionId": "transactionId exceeds 255 characters",
	"traceName":     "traceName exceeds 255 characters",
}

// queryNameLimits names the length message of each query parameter that carries a name
// (docs/api/README.md §2.9, docs/api/admin-api.md "Listing parameters"), in the order they are checked. The check
// is the same on every route, whether or not the route reads the parameter: a name is
// refused wherever it arrives (docs/decisions.md).
var queryNameLimits = []struct{ name, msg string }{
	{"queue", "queue exceeds 255 characters"},
	{"partition", "partition exceeds 255 characters"},
	{"namespace", "namespace exceeds 255 characters"},
	{"ns", "namespace exceeds 255 characters"},
	{"task", "task exceeds 255 characters"},
	{"consumerGroup", "consumerGroup exceeds 255 characters"},
	{"group", "consumerGroup exceeds 255 characters"},
	{"transactionId", "transactionId exceeds 255 characters"},
	{"traceName", "traceName exceeds 255 characters"},
	{"search", "search exceeds 255 characters"},
}

// checkRequestText applies the path and query rules of docs/api/README.md §2.9 to a routed request:
// every path parameter and every query name and value must be UTF-8 after decoding, then
// every name among them must fit its limit. It returns the 400 message, "" when the request
// passes. The router calls it after authentication and before the handler, so these answers
// come before the route's own checks.
func checkRequestText(req *http.Request, m *routeMatch) string {
	for _, v := range m.values {
		if !utf8.ValidString(v) {
			return msgInvalidUTF8
		}
	}
	var q url.Values
	if raw := req.URL.RawQuery; len(raw) > maxNameChars || !plainASCII(raw) {
		// Otherwise nothing needs decoding: every name and value is ASCII, and none can be
		// longer than the whole query. Most pops and listings take that path.
		// A malformed escape drops its pair (url.ParseQuery keeps going); the handlers read
		// the query the same way, so a dropped pair is one they never see either.
		q, _ = url.ParseQuery(req.URL.RawQuery)
		for k, vs := range q {
			if !utf8.ValidString(k) {
				return msgInvalidUTF8
			}
			for _, v := range vs {
				if !utf8.ValidString(v) {
					return msgInvalidUTF8
				}
			}
		}
	}
	for i, name := range m.route.paramNames {
		if msg, ok := pathNameLimits[name]; ok && i < len(m.values) && tooLong(m.values[i]) {
			return msg
		}
	}
	for _, l := range queryNameLimits {
		if v, _ := queryString(q, l.name); tooLong(v) {
			return l.msg
		}
	}
	return ""
}

// queryIntMax is queryInt capped at max: a missing, malformed or beyond-64-bit value is def,
// a larger one is max (docs/api/README.md §2.9). Values below the route's minimum are the caller's rule.
func queryIntMax(q url.Values, name string, def, max int) int {
	return min(queryInt(q, name, def), max)
}

// hasNUL reports whether any of names holds U+0000, which PostgreSQL text cannot store: such
// a name matches nothing, so the lookup is answered without the database (docs/api/README.md §2.9).
func hasNUL(names ...string) bool {
	for _, n := range names {
		if strings.IndexByte(n, 0) >= 0 {
			return true
		}
	}
	return false
}

// cutReason prepares a free-text reason for storage: never refused (docs/api/README.md §2.9), it keeps
// its first 4,096 characters, and U+0000, which PostgreSQL text cannot hold, becomes U+FFFD
// (docs/decisions.md). The input is valid UTF-8 (a JSON string decoded from a UTF-8 body).
func cutReason(s string) string {
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	}
	if len(s) <= maxReasonChars {
		return s
	}
	n := 0
	for i := range s {
		if n == maxReasonChars {
			return s[:i]
		}
		n++
	}
	return s
}

// reasonString decodes a free-text reason: a JSON string, U+0000 included (asString refuses
// it, since names cannot hold it, but a reason is never refused); ok=false for other values.
func reasonString(raw []byte) (string, bool) {
	if jsonKind(raw) != '"' {
		return "", false
	}
	if s, ok := asString(raw); ok {
		return cutReason(s), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return cutReason(s), true
}

// nulString reports whether raw is a JSON string whose value holds U+0000: asString refuses
// it like a non-string, but a field that ignores non-strings must refuse it instead of
// falling back to its default (docs/api/README.md §2.9).
func nulString(raw json.RawMessage) bool {
	if jsonKind(raw) != '"' {
		return false
	}
	if _, ok := asString(raw); ok {
		return false
	}
	var s string
	return json.Unmarshal(raw, &s) == nil
}

// optName checks an optional name field whose non-string values are ignored: a string
// holding U+0000 answers "<field> must not contain U+0000", one over 255 characters
// "<lenField> exceeds 255 characters".
func optName(raw json.RawMessage, field, lenField string) string {
	if nulString(raw) {
		return field + " must not contain U+0000"
	}
	if v, ok := asString(raw); ok && tooLong(v) {
		return lenField + " exceeds 255 characters"
	}
	return ""
}

// plainASCII reports whether s is ASCII without percent escapes: its
// decoded query names and values are then substrings of s, valid UTF-8.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c == '%' {
			return false
		}
	}
	return true
}
