package store

import (
	"context"
	"testing"
)

// uuidParam sends canonical UUIDs in binary and keeps anything else in text, so PostgreSQL
// reads the same array either way: NULLs stay NULL, nil stays NULL, a bad element still fails.
func TestUUIDParamReadsAsTheTextForm(t *testing.T) {
	ctx := context.Background()
	s := openSchema(t, "public")
	id := "0193a3f0-0000-7000-8000-00000000000A"
	empty := ""
	for _, c := range []struct {
		name string
		arg  any
		want string
	}{
		{"strings", uuidParam([]string{id, ""}), "{0193a3f0-0000-7000-8000-00000000000a,NULL}"},
		{"pointers", uuidParam([]*string{nil, &id, &empty}), "{NULL,0193a3f0-0000-7000-8000-00000000000a,NULL}"},
		{"nil", uuidParam([]string(nil)), "<NULL>"},
		{"not canonical", uuidParam([]string{"{" + id + "}"}), "{0193a3f0-0000-7000-8000-00000000000a}"},
	} {
		var got string
		if err := s.pool.QueryRow(ctx, "SELECT coalesce($1::uuid[]::text, '<NULL>')", c.arg).Scan(&got); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	if _, ok := uuidParam([]string{id}).([]string); ok {
		t.Error("a canonical UUID went as text")
	}
	var ignored string
	if err := s.pool.QueryRow(ctx, "SELECT $1::uuid[]::text", uuidParam([]string{"urn:uuid:" + id})).Scan(&ignored); err == nil {
		t.Error("a string PostgreSQL refuses as a uuid was accepted")
	}
}
