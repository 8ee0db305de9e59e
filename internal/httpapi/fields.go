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
