package httpapi

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/queen-go/queen/internal/jsonread"
)

// Batch bodies (a push of 100 items, an ack of 100 messages) were half of the broker's CPU
// on those routes while encoding/json validated each body, decoded it, then decoded every
// element again. readRecords reads the common shape in one pass; anything unusual goes to
// the exact path, which gives the API reference's answers (FuzzPushFastMatchesExact,
// FuzzAckBatchFastMatchesExact check that both read the same).

// readBatch reads and validates a batch body, answering 400 itself when it is refused: the
// one-pass reader takes the common body, the exact path (readJSON's checks, then exact) any
// other, so that every refusal gets the API reference's message.
func readBatch[T any](w http.ResponseWriter, r *http.Request, fast func([]byte) ([]T, bool),
	exact func(json.RawMessage) ([]T, string)) ([]T, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	if items, ok := fast(body); ok {
		return items, true
	}
	var raw json.RawMessage
	if !decodeJSON(w, body, &raw) {
		return nil, false
	}
	items, msg := exact(raw)
	if msg != "" {
		writeError(w, http.StatusBadRequest, msg)
		return nil, false
	}
	return items, true
}

// readRecords reads body when it is an object whose arrayKey member is an array of objects,
// as {"items": [{...}, ...]}. It returns the raw value of each of topKeys and, per element,
// of each of fields (stride len(fields); nil when absent), the way encoding/json fills
// json.RawMessage fields. ok=false when the body has another shape, is not valid JSON, or has
// a key that is escaped or matches a wanted name only ignoring case (encoding/json would
// match it): the caller then takes its exact path.
func readRecords(body []byte, arrayKey string, topKeys, fields []string) (top, records []json.RawMessage, ok bool) {
	r := jsonread.New(body)
	top = make([]json.RawMessage, len(topKeys))
	names := append(slices.Clip(topKeys), arrayKey)
	seen := false
	for more := r.Open('{'); more; more = r.More('}') {
		i, ok := wantedKey(r, names)
		switch {
		case !ok:
			return nil, nil, false
		case i == len(topKeys):
			if records, ok = readArray(r, fields); !ok {
				return nil, nil, false
			}
			seen = true
		case i >= 0:
			if top[i], ok = rawValue(r); !ok {
				return nil, nil, false
			}
		default:
			if r.Skip() != nil {
				return nil, nil, false
			}
		}
	}
	return top, records, seen && r.Err() == nil && r.End() == nil
}

// readArray reads an array of objects, keeping the raw value of each of fields per element.
func readArray(r *jsonread.Reader, fields []string) ([]json.RawMessage, bool) {
	if r.Next() != '[' {
		return nil, false
	}
	records := make([]json.RawMessage, 0, 8*len(fields))
	for more := r.Open('['); more; more = r.More(']') {
		if r.Next() != '{' {
			return nil, false
		}
		rec := len(records)
		records = append(records, make([]json.RawMessage, len(fields))...)
		for more := r.Open('{'); more; more = r.More('}') {
			i, ok := wantedKey(r, fields)
			if !ok {
				return nil, false
			}
			if i < 0 {
				if r.Skip() != nil {
					return nil, false
				}
				continue
			}
			if records[rec+i], ok = rawValue(r); !ok {
				return nil, false
			}
		}
	}
	return records, r.Err() == nil
}

// wantedKey reads a key and its colon and returns its index in names (-1: not wanted).
// ok=false when the key is malformed, escaped, or equal to a name only ignoring case.
func wantedKey(r *jsonread.Reader, names []string) (i int, ok bool) {
	key, plain, err := r.Key()
	if err != nil || !plain {
		return 0, false
	}
	if i := slices.Index(names, string(key)); i >= 0 {
		return i, true
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, string(key)) }) {
		return 0, false
	}
	return -1, true
}

func rawValue(r *jsonread.Reader) (json.RawMessage, bool) {
	raw, err := r.Raw()
	return raw, err == nil
}
