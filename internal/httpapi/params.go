package httpapi

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// queryString returns the first value of the query parameter name, and
// whether it is present at all (docs/api/README.md §2.1: when a name repeats, the first
// value wins).
func queryString(q url.Values, name string) (string, bool) {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[0], true
}

// nameArgs reads the names a handler passes to the read side from the path and the query
// string, and notes whether any holds U+0000 (docs/api/README.md §2.9). PostgreSQL text cannot
// hold that character and refuses the whole statement (a 500), so such a name matches nothing:
// when nul is set, the handler answers what it answers for an unknown name (not found,
// nothing deleted, an empty list) without calling the read side. Body names never need it:
// the body checks refuse them with a 400. TestNULNamesNeverReachTheReadSide sends U+0000 in
// every path parameter and query name of every route, so a handler that reads a name another
// way, or forgets to look at nul, fails it.
type nameArgs struct {
	nul bool // some name read holds U+0000
}

// path returns the path parameter key (PathParam).
func (n *nameArgs) path(r *http.Request, key string) string { return n.note(PathParam(r, key)) }

// query returns the query parameter key, "" when absent (queryFilter).
func (n *nameArgs) query(q url.Values, key string) string { return n.note(queryFilter(q, key)) }

// note returns v, noting whether it holds U+0000.
func (n *nameArgs) note(v string) string {
	if hasNUL(v) {
		n.nul = true
	}
	return v
}

// queryBool reads a boolean query parameter: "true" or "1" in any case is
// true, anything else (including absence) is false.
func queryBool(q url.Values, name string) bool {
	v, _ := queryString(q, name)
	return v == "1" || strings.EqualFold(v, "true")
}

// queryInt reads a decimal query parameter, falling back to def when it is
// missing, malformed or does not fit an int. Routes for which a bad value is
// a 400 must use queryString and parse it themselves.
func queryInt(q url.Values, name string, def int) int {
	v, ok := queryString(q, name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return def
	}
	return n
}

// errTimestamp is returned for any text that is not one of the accepted forms;
// the caller decides the route-specific message.
var errTimestamp = errors.New("invalid timestamp")

// parseTimestamp reads a timestamp as the broker accepts it (docs/api/README.md §2.3):
// YYYY-MM-DD, 'T' or a space, hh:mm:ss, an optional fraction of any length,
// then 'Z', ±hh:mm or nothing (UTC). A space in place of the offset sign is an
// unencoded '+' that query decoding turned into a space, so it reads as '+'.
// time.Parse is not used because it takes neither the space forms nor a
// missing offset, and accepts things the API reference does not. The result is in UTC.
func parseTimestamp(s string) (time.Time, error) {
	// Fixed part: 2006-01-02T15:04:05 (19 bytes).
	if len(s) < 19 || s[4] != '-' || s[7] != '-' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, errTimestamp
	}
	switch s[10] {
	case 'T', 't', ' ':
	default:
		return time.Time{}, errTimestamp
	}
	year, ok1 := parseDigits(s[0:4])
	month, ok2 := parseDigits(s[5:7])
	day, ok3 := parseDigits(s[8:10])
	hour, ok4 := parseDigits(s[11:13])
	minute, ok5 := parseDigits(s[14:16])
	sec, ok6 := parseDigits(s[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) ||
		month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, errTimestamp
	}
	rest := s[19:]

	nsec := 0
	if strings.HasPrefix(rest, ".") {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			// Digits past nanoseconds are dropped, not rounded, as time.Parse does.
			if i <= 9 {
				nsec = nsec*10 + int(rest[i]-'0')
			}
			i++
		}
		if i == 1 {
			return time.Time{}, errTimestamp
		}
		for n := i; n <= 9; n++ {
			nsec *= 10
		}
		rest = rest[i:]
	}

	offset := 0
	switch {
	case rest == "":
	case rest == "Z" || rest == "z":
	case len(rest) == 6 && rest[3] == ':' && (rest[0] == '+' || rest[0] == '-' || rest[0] == ' '):
		oh, okh := parseDigits(rest[1:3])
		om, okm := parseDigits(rest[4:6])
		if !okh || !okm || oh > 23 || om > 59 {
			return time.Time{}, errTimestamp
		}
		offset = (oh*60 + om) * 60
		if rest[0] == '-' {
			offset = -offset
		}
	default:
		return time.Time{}, errTimestamp
	}

	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day {
		// time.Date normalised an impossible date such as 02-30.
		return time.Time{}, errTimestamp
	}
	return t.Add(-time.Duration(offset) * time.Second), nil
}

// parseDigits parses an all-digit string; strconv.Atoi would also accept signs.
func parseDigits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// formatMicro renders the createdAt of popped messages: UTC, exactly six
// fractional digits and a literal Z (docs/api/README.md §2.3).
func formatMicro(t time.Time) string {
	return t.UTC().Format(microLayout)
}

// microLayout is the layout of formatMicro.
const microLayout = "2006-01-02T15:04:05.000000Z"

// formatMilli renders every other response timestamp: UTC, exactly three
// fractional digits and a literal Z (docs/api/README.md §2.3).
func formatMilli(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000Z")
}
