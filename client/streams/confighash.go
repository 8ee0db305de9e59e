package streams

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// field is one structural config entry of an operator, in declaration order.
type field struct {
	key   string
	value any
}

// ConfigHash is the config_hash of an operator chain as Queen's streaming SDKs compute it
// (docs/api/streams.md §7.1): the lower-case hex SHA-256 of the compact JSON array of the
// operators in order, each an object whose first key is "kind", followed by the operator's
// structural config keys in the order the official JavaScript SDK declares them; a config key
// named "kind" replaces the outer one in place (JavaScript's {kind, ...config} spread). User
// functions are never hashed. Equal chains hash equally in every runtime, which is what lets a
// query registered by one runtime resume in another.
func (s *Stream) ConfigHash() string { return configHash(s.ops) }

func configHash(ops []*operator) string {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, op := range ops {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(describe(op))
	}
	buf.WriteByte(']')
	sum := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(sum[:])
}

// describe is the JSON text of {kind: op.kind, ...op.config} with JavaScript's key order:
// the spread keeps "kind" in first position and overwrites its value when config has one.
func describe(op *operator) []byte {
	keys := []string{"kind"}
	values := map[string]any{"kind": op.kind}
	for _, f := range op.config {
		if _, seen := values[f.key]; !seen {
			keys = append(keys, f.key)
		}
		values[f.key] = f.value
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(jsJSON(k))
		buf.WriteByte(':')
		buf.Write(jsJSON(values[k]))
	}
	buf.WriteByte('}')
	return buf.Bytes()
}

// jsJSON encodes v as JavaScript's JSON.stringify does for the values configs hold (strings,
// numbers, booleans, string arrays): encoding/json already formats numbers the ECMAScript way
// and must only be kept from escaping <, >, & (HTML escaping), which JSON.stringify writes as
// they are. (It still escapes U+2028/U+2029, which JSON.stringify does not: a queue name
// holding one would hash differently; such names are not worth the extra code.)
func jsJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
