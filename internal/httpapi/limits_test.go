package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutReason(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"short", "short"},
		{strings.Repeat("x", 4096), strings.Repeat("x", 4096)},
		{strings.Repeat("x", 4097), strings.Repeat("x", 4096)},
		{strings.Repeat("é", 4097), strings.Repeat("é", 4096)},
		{strings.Repeat("x", 4095) + "😀😀", strings.Repeat("x", 4095) + "😀"},
		{"a\x00b", "a\uFFFDb"},
	} {
		if got := cutReason(tc.in); got != tc.want {
			t.Errorf("cutReason(%.20q… %d chars) = %.20q… (%d chars)", tc.in, utf8.RuneCountInString(tc.in), got,
				utf8.RuneCountInString(got))
		}
	}
}

// A stored reason is valid UTF-8, holds no U+0000 and at most 4,096 characters, and is a
// prefix of the reason with U+0000 replaced.
func FuzzCutReason(f *testing.F) {
	f.Add("")
	f.Add(strings.Repeat("é", 5000))
	f.Add("a\x00b")
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // reasons come from JSON strings of a UTF-8 body
		}
		got := cutReason(s)
		if !utf8.ValidString(got) || strings.IndexByte(got, 0) >= 0 || utf8.RuneCountInString(got) > maxReasonChars ||
			!strings.HasPrefix(strings.ReplaceAll(s, "\x00", "\uFFFD"), got) {
			t.Fatalf("cutReason(%q) = %q", s, got)
		}
		if utf8.RuneCountInString(s) <= maxReasonChars && got != strings.ReplaceAll(s, "\x00", "\uFFFD") {
			t.Fatalf("a short reason was changed: %q -> %q", s, got)
		}
	})
}

// The short-cut for plain ASCII queries answers as decoding every pair would.
func FuzzCheckRequestTextQuery(f *testing.F) {
	rt := &routeEntry{pattern: "/x"}
	for _, s := range []string{"", "a=b", "queue=" + strings.Repeat("q", 300), "%FF=1", "a=%C3", "search=x+y", "a;b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		req := httptest.NewRequest("GET", "/x", nil)
		req.URL.RawQuery = raw
		got := checkRequestText(req, &routeMatch{route: rt})
		if plainASCII(raw) && len(raw) <= maxNameChars && got != "" {
			t.Fatalf("plain query %q refused: %s", raw, got)
		}
		if !plainASCII(raw) || len(raw) > maxNameChars {
			return
		}
		// Forcing the decoding path (a long tail that decodes to nothing) changes nothing.
		req.URL.RawQuery = raw + "&" + strings.Repeat("&", maxNameChars)
		if again := checkRequestText(req, &routeMatch{route: rt}); again != got {
			t.Fatalf("%q: %q with decoding, %q without", raw, again, got)
		}
	})
}
