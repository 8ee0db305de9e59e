package httpapi

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// maxNameChars is the longest queue, partition, transactionId or group name (in characters).
const maxNameChars = 255

// jsonKind classifies a raw JSON value by its first byte; "" for an absent field.
func jsonKind(raw json.RawMessage) byte {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return 0
	}
	return raw[0]
}

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool { return jsonKind(raw) == '{' }

// isArray reports whether raw is a JSON array.
func isArray(raw json.RawMessage) bool { return jsonKind(raw) == '[' }

// isNull reports whether raw is absent or JSON null (the same for optional fields).
func isNull(raw json.RawMessage) bool {
	k := jsonKind(raw)
	return k == 0 || k == 'n'
}

// asString decodes raw when it is a JSON string. A string holding U+0000 is refused like a
// non-string: PostgreSQL text cannot store it, so no name, key or label can contain it.
func asString(raw json.RawMessage) (string, bool) {
	if jsonKind(raw) != '"' {
		return "", false
	}
	if s, ok := plainString(bytes.TrimLeft(raw, " \t\r\n")); ok {
		return s, true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil || strings.IndexByte(s, 0) >= 0 {
		return "", false
	}
	return s, true
}

// optString is an optional string field: absent or null gives ("", true); a string gives it;
// any other type gives ok=false.
func optString(raw json.RawMessage) (string, bool) {
	if isNull(raw) {
		return "", true
	}
	return asString(raw)
}

// tooLong reports whether s exceeds the name limit in characters.
func tooLong(s string) bool {
	return len(s) > maxNameChars && utf8.RuneCountInString(s) > maxNameChars
}

// plainString decodes lit when it is exactly one string literal without escapes, control
// characters or invalid UTF-8: then its value is its bytes between the quotes, which is what
// json.Unmarshal would give, without the decoder's setup and second validation pass. Names,
// keys and ids almost always take this path; ok=false leaves the decision to json.Unmarshal.
func plainString(lit []byte) (string, bool) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", false
	}
	inner := lit[1 : len(lit)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < ' ' {
			return "", false
		}
	}
	if !utf8.Valid(inner) {
		return "", false
	}
	return string(inner), true
}

// parseEach validates arr, a JSON array of objects, into one R per element with parse and
// answers the first failure: notArray when arr is no array, notObject for an element that is
// not an object, else parse's message. A valid batch is decoded in one pass (parseAll); only a
// batch with a failure is decoded again element by element (parseSeq), so that the message is
// the first failing element's whatever its kind. Both give the same elements for a valid
// batch: each is decoded from the same bytes into a fresh T.
func parseEach[T, R any](arr json.RawMessage, notArray, notObject string, parse func(*T) (R, string)) ([]R, string) {
	if out, ok := parseAll(arr, parse); ok {
		return out, ""
	}
	return parseSeq(arr, notArray, notObject, parse)
}

// parseSeq is parseEach's exact path: each element is checked and decoded on its own, in
// order, so the answer is the first failing element's.
func parseSeq[T, R any](arr json.RawMessage, notArray, notObject string, parse func(*T) (R, string)) ([]R, string) {
	var raws []json.RawMessage
	if !isArray(arr) || json.Unmarshal(arr, &raws) != nil {
		return nil, notArray
	}
	out := make([]R, len(raws))
	for i, raw := range raws {
		var elem T
		if !isObject(raw) || json.Unmarshal(raw, &elem) != nil {
			return nil, notObject
		}
		var msg string
		if out[i], msg = parse(&elem); msg != "" {
			return nil, msg
		}
	}
	return out, ""
}

// parseAll is parseEach's one-pass path; ok=false on any failure. Elements are pointers so
// that a JSON null element, which decodes without error, shows as nil and fails here too.
func parseAll[T, R any](arr json.RawMessage, parse func(*T) (R, string)) ([]R, bool) {
	var elems []*T
	if !isArray(arr) || json.Unmarshal(arr, &elems) != nil {
		return nil, false
	}
	out := make([]R, len(elems))
	for i, e := range elems {
		if e == nil {
			return nil, false
		}
		var msg string
		if out[i], msg = parse(e); msg != "" {
			return nil, false
		}
	}
	return out, true
}
