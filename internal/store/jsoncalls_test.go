package store

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// jsonCalls pairs each call argument passed as one JSON object with the composite type the
// SQL function reads it into (jsonb_populate_record).
var jsonCalls = []struct {
	typ  string
	call any
}{
	{"qg_txn_call", txnCall{}},
	{"qg_cycle_call", cycleCall{}},
}

// The keys of each JSON call argument are exactly its composite type's fields, in the same
// order: jsonb_populate_record ignores a key the type lacks and leaves a field the object lacks
// NULL, so a key renamed on one side only would otherwise pass a value to no one. The order is
// the reader's, not PostgreSQL's: one list to compare with the other.
func TestJSONCallsMatchTheirTypes(t *testing.T) {
	ctx := context.Background()
	s := migratedSchema(t, "json_calls")
	for _, c := range jsonCalls {
		rows, err := s.pool.Query(ctx, `SELECT attname::text FROM pg_attribute
			WHERE attrelid = (SELECT typrelid FROM pg_type WHERE oid = to_regtype($1)) AND attnum > 0 AND NOT attisdropped
			ORDER BY attnum`, c.typ)
		if err != nil {
			t.Fatal(err)
		}
		var fields []string
		for rows.Next() {
			var f string
			if err := rows.Scan(&f); err != nil {
				t.Fatal(err)
			}
			fields = append(fields, f)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		keys := jsonKeys(reflect.TypeOf(c.call))
		if !slices.Equal(keys, fields) {
			t.Errorf("%T's JSON keys %v, but %s has the fields %v", c.call, keys, c.typ, fields)
		}
	}
	for _, c := range sqlCalls {
		// Every call argument that is one of this package's structs (a JSON call) is listed above;
		// mq.QueueOptions, qg_configure's JSON, is read key by key and tested by its own route.
		for _, f := range paramFields(reflect.TypeOf(c.call)) {
			if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == reflect.TypeOf(txnCall{}).PkgPath() && !slices.ContainsFunc(jsonCalls, func(j struct {
				typ  string
				call any
			}) bool {
				return reflect.TypeOf(j.call) == f.Type
			}) {
				t.Errorf("%s.%s is a struct argument not in jsonCalls", reflect.TypeOf(c.call).Name(), f.Name)
			}
		}
	}
}

// jsonKeys are a struct's JSON keys in field order, an embedded struct's in its place (as
// encoding/json promotes them).
func jsonKeys(typ reflect.Type) []string {
	var out []string
	for f := range typ.Fields() {
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonKeys(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}
