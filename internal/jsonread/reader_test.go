package jsonread

import (
	"encoding/json"
	"strings"
	"testing"
)

// A Reader accepts exactly the text encoding/json accepts.
func TestSkipAgreesWithEncodingJSON(t *testing.T) {
	for _, in := range []string{`{}`, `[]`, ` {"a" : [1, -0.5e+3, true, false, null, "x\"y", "\u00e9", {"b":{}}]} `,
		`""`, `"\ud83d\ude00"`, "\"\xff\"", `0`, `-0`, `1E9`,
		``, `{`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `+1`, `tru`, `nul`, `"\q"`, "\"\x01\"",
		`"abc`, `{} {}`, `[1 2]`, `{1:2}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000)} {
		checkSkip(t, []byte(in))
	}
}

func FuzzSkip(f *testing.F) {
	for _, in := range []string{`{"items":[{"queue":"q","payload":{"a":[1,2.5,"s"]}}]}`, `"\ud800"`, `[{"a":null}]`} {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, in []byte) { checkSkip(t, in) })
}

func checkSkip(t *testing.T, in []byte) {
	t.Helper()
	r := New(in)
	raw, err := r.Raw()
	if err == nil {
		err = r.End()
	}
	if want := json.Valid(in); (err == nil) != want {
		t.Fatalf("%.80q: json.Valid %v, Reader error %v", in, want, err)
	}
	if err == nil && string(raw) != strings.Trim(string(in), " \t\r\n") {
		t.Fatalf("%.80q: Raw gave %.80q", in, raw)
	}
}

func TestKeysAndStrings(t *testing.T) {
	r := New([]byte(`{"plain": "v", "esc\u0061ped" : "\u00e9", "n": null}`))
	var got []string
	for more := r.Open('{'); more; more = r.More('}') {
		key, plain, err := r.Key()
		if err != nil {
			t.Fatal(err)
		}
		v := "unchanged"
		if err := r.StringOrNull(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, string(key)+"|"+map[bool]string{true: "plain", false: "raw"}[plain]+"|"+v)
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	want := `plain|plain|v "esc\u0061ped"|raw|é n|plain|unchanged`
	if strings.Join(got, " ") != want {
		t.Fatalf("got  %s\nwant %s", strings.Join(got, " "), want)
	}
}
