// Package jsonread reads JSON text in place, in one pass, for the hot paths where
// encoding/json's validate-then-decode passes over a whole body are most of the CPU spent (a
// push body of 100 items, a pop answer of 100 messages). A Reader validates all it reads or
// skips exactly as encoding/json does; callers read the few fields they need and hand anything
// unusual (escaped keys, odd types) to encoding/json.
package jsonread

import (
	"bytes"
	"encoding/json"
	"errors"
)

// ErrSyntax reports JSON text that is not valid.
var ErrSyntax = errors.New("invalid JSON")

// New returns a Reader at the start of b.
func New(b []byte) *Reader { return &Reader{b: b} }

// Reader walks JSON text in place. Objects and arrays are read as
//
//	for more := r.Open('{'); more; more = r.More('}') { key, value }
//	if err := r.Err(); err != nil { … }
//
// where each member is consumed in full (Key then a value read, Raw or Skip).
type Reader struct {
	b      []byte
	i      int
	failed bool // Open or More met a malformed container
	depth  int  // containers Skip is inside
}

// Open consumes the opening byte c ('{' or '[') and reports whether a member follows.
func (r *Reader) Open(c byte) bool {
	if r.Next() != c {
		r.failed = true
		return false
	}
	r.i++
	if r.Next() == c+2 { // '}' is '{'+2, ']' is '['+2
		r.i++
		return false
	}
	return true
}

// More consumes the separator after a member and reports whether another follows.
func (r *Reader) More(close byte) bool {
	switch r.Next() {
	case ',':
		r.i++
		return true
	case close:
		r.i++
		return false
	}
	r.failed = true
	return false
}

// Err reports a malformed container met by Open or More.
func (r *Reader) Err() error {
	if r.failed {
		return ErrSyntax
	}
	return nil
}

// End reports whether only white space is left.
func (r *Reader) End() error {
	if r.skipSpace() != len(r.b) {
		return ErrSyntax
	}
	return nil
}

// Key reads an object key and its colon. A plain key (printable ASCII, no escapes) comes
// back as its text; any other comes back quoted as written with plain=false, for callers to
// decide (encoding/json would unescape it before matching a field).
func (r *Reader) Key() (key []byte, plain bool, err error) {
	from, plain, err := r.stringEnd()
	if err != nil {
		return nil, false, err
	}
	key = r.b[from:r.i]
	if plain {
		key = key[1 : len(key)-1]
	}
	if r.Next() != ':' {
		return nil, false, ErrSyntax
	}
	r.i++
	return key, plain, nil
}

// skipSpace moves past white space and returns the position reached.
func (r *Reader) skipSpace() int {
	for r.i < len(r.b) {
		switch r.b[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return r.i
		}
	}
	return r.i
}

// Next reports the next non-space byte without consuming it (0 at the end).
func (r *Reader) Next() byte {
	if r.skipSpace() == len(r.b) {
		return 0
	}
	return r.b[r.i]
}

// Null consumes a null if one is next.
func (r *Reader) Null() bool {
	return r.Next() == 'n' && r.literal("null") == nil
}

// Raw consumes one value and returns its text, without the space around it: what
// encoding/json stores in a json.RawMessage, but sharing the reader's buffer.
func (r *Reader) Raw() ([]byte, error) {
	from := r.skipSpace()
	if err := r.Skip(); err != nil {
		return nil, err
	}
	return r.b[from:r.i], nil
}

// StringOrNull reads a string into dst; null leaves dst as it is, as encoding/json does.
// Plain ASCII is copied as it is; a string with escapes or other bytes goes through
// encoding/json, so both decode it alike (escapes, invalid UTF-8).
func (r *Reader) StringOrNull(dst *string) error {
	if r.Null() {
		return nil
	}
	from, plain, err := r.stringEnd()
	if err != nil {
		return err
	}
	raw := r.b[from:r.i]
	if plain {
		*dst = string(raw[1 : len(raw)-1])
		return nil
	}
	return json.Unmarshal(raw, dst)
}

// stringEnd consumes a string token and returns where it began and whether it is plain
// ASCII without escapes; any other string is checked by encoding/json.
func (r *Reader) stringEnd() (from int, plain bool, err error) {
	if r.Next() != '"' {
		return 0, false, ErrSyntax
	}
	from, plain = r.i, true
	for r.i++; r.i < len(r.b); r.i++ {
		// Most strings are plain: find their end at once, then look inside.
		if plain {
			end := bytes.IndexByte(r.b[r.i:], '"')
			if end < 0 {
				return 0, false, ErrSyntax // unterminated
			}
			for _, c := range r.b[r.i : r.i+end] {
				if c < 0x20 || c >= 0x80 || c == '\\' {
					plain = false
					break
				}
			}
			if plain {
				r.i += end + 1
				return from, true, nil
			}
		}
		switch c := r.b[r.i]; {
		case c == '"':
			r.i++
			if !json.Valid(r.b[from:r.i]) {
				return 0, false, ErrSyntax
			}
			return from, false, nil
		case c == '\\':
			r.i++
		}
	}
	return 0, false, ErrSyntax
}

// maxDepth is encoding/json's nesting limit; deeper text is invalid to both.
const maxDepth = 10000

// Skip consumes one value of any kind.
func (r *Reader) Skip() error {
	switch r.Next() {
	case '{', '[':
		if r.depth++; r.depth > maxDepth {
			return ErrSyntax
		}
		defer func() { r.depth-- }()
	}
	switch r.Next() {
	case '{':
		for more := r.Open('{'); more; more = r.More('}') {
			if _, _, err := r.Key(); err != nil {
				return err
			}
			if err := r.Skip(); err != nil {
				return err
			}
		}
		return r.Err()
	case '[':
		for more := r.Open('['); more; more = r.More(']') {
			if err := r.Skip(); err != nil {
				return err
			}
		}
		return r.Err()
	case '"':
		_, _, err := r.stringEnd()
		return err
	case 't':
		return r.literal("true")
	case 'f':
		return r.literal("false")
	case 'n':
		return r.literal("null")
	}
	return r.number()
}

func (r *Reader) literal(word string) error {
	if len(r.b)-r.i < len(word) || string(r.b[r.i:r.i+len(word)]) != word {
		return ErrSyntax
	}
	r.i += len(word)
	return nil
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (r *Reader) number() error {
	if r.i < len(r.b) && r.b[r.i] == '-' {
		r.i++
	}
	switch {
	case r.i < len(r.b) && r.b[r.i] == '0':
		r.i++
	case r.digits() == 0:
		return ErrSyntax
	}
	if r.i < len(r.b) && r.b[r.i] == '.' {
		r.i++
		if r.digits() == 0 {
			return ErrSyntax
		}
	}
	if r.i < len(r.b) && (r.b[r.i] == 'e' || r.b[r.i] == 'E') {
		r.i++
		if r.i < len(r.b) && (r.b[r.i] == '+' || r.b[r.i] == '-') {
			r.i++
		}
		if r.digits() == 0 {
			return ErrSyntax
		}
	}
	return nil
}

func (r *Reader) digits() int {
	from := r.i
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		r.i++
	}
	return r.i - from
}
