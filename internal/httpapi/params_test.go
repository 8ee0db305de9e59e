package httpapi

import (
	"net/url"
	"testing"
	"time"
)

func TestQueryParams(t *testing.T) {
	q, err := url.ParseQuery("s=first&s=second&e=&sp=a+b%2Bc" +
		"&b1=true&b2=TRUE&b3=1&b4=yes&b5=0&b6=false&b7=True&b8=&b9=true&b9=false" +
		"&i1=42&i2=-7&i3=abc&i4=9223372036854775808&i5=&i6=1.5&i7=+3&i8=%2B3&i9=10&i9=x")
	if err != nil {
		t.Fatal(err)
	}

	strs := []struct {
		name   string
		want   string
		wantOK bool
	}{
		{"s", "first", true},
		{"e", "", true},
		{"sp", "a b+c", true},
		{"missing", "", false},
	}
	for _, tc := range strs {
		if got, ok := queryString(q, tc.name); got != tc.want || ok != tc.wantOK {
			t.Errorf("queryString(%s) = %q,%v want %q,%v", tc.name, got, ok, tc.want, tc.wantOK)
		}
	}

	bools := map[string]bool{
		"b1": true, "b2": true, "b3": true, "b4": false, "b5": false, "b6": false,
		"b7": true, "b8": false, "b9": true, "missing": false,
	}
	for name, want := range bools {
		if got := queryBool(q, name); got != want {
			t.Errorf("queryBool(%s) = %v, want %v", name, got, want)
		}
	}

	ints := map[string]int{
		"i1": 42, "i2": -7, "i3": 5, "i4": 5, "i5": 5, "i6": 5,
		"i7": 5, // "+3" decodes to " 3", which is malformed
		"i8": 3, "i9": 10, "missing": 5,
	}
	for name, want := range ints {
		if got := queryInt(q, name, 5); got != want {
			t.Errorf("queryInt(%s) = %d, want %d", name, got, want)
		}
	}
}

func TestParseTimestamp(t *testing.T) {
	base := time.Date(2026, 4, 26, 10, 59, 28, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Time // zero = must fail
	}{
		{"2026-04-26T10:59:28Z", base},
		{"2026-04-26T10:59:28z", base},
		{"2026-04-26t10:59:28Z", base},
		{"2026-04-26T10:59:28", base},
		{"2026-04-26 10:59:28", base},
		{"2026-04-26 10:59:28Z", base},
		{"2026-04-26T10:59:28.267Z", base.Add(267 * time.Millisecond)},
		{"2026-04-26T10:59:28.267966Z", base.Add(267966 * time.Microsecond)},
		{"2026-04-26T10:59:28.5", base.Add(500 * time.Millisecond)},
		{"2026-04-26T10:59:28.123456789Z", base.Add(123456789)},
		{"2026-04-26T10:59:28.1234567891Z", base.Add(123456789)},
		{"2026-04-26T12:59:28+02:00", base},
		{"2026-04-26T12:59:28.267+02:00", base.Add(267 * time.Millisecond)},
		{"2026-04-26T08:29:28-02:30", base},
		{"2026-04-26T12:59:28 02:00", base}, // unencoded '+' in a query string
		{"2026-04-26 12:59:28 02:00", base},
		{"2026-04-26T10:59:28+00:00", base},
		{"2026-04-26T10:59:28-00:00", base},
		{"2026-04-27T00:30:00+13:30", time.Date(2026, 4, 26, 11, 0, 0, 0, time.UTC)},
		{"2024-02-29T00:00:00Z", time.Date(2024, 2, 29, 0, 0, 0, 0, time.UTC)},

		{"", time.Time{}},
		{"2026-04-26", time.Time{}},
		{"2026-04-26T10:59", time.Time{}},
		{"2026-04-26X10:59:28Z", time.Time{}},
		{"2026-04-26T10:59:28.Z", time.Time{}},
		{"2026-04-26T10:59:28.", time.Time{}},
		{"2026-04-26T10:59:28+0200", time.Time{}},
		{"2026-04-26T10:59:28+02", time.Time{}},
		{"2026-04-26T10:59:28+2:00", time.Time{}},
		{"2026-04-26T10:59:28+24:00", time.Time{}},
		{"2026-04-26T10:59:28+02:60", time.Time{}},
		{"2026-04-26T10:59:28ZZ", time.Time{}},
		{"2026-04-26T10:59:28 Z", time.Time{}},
		{"2026-04-26T10:59:28UTC", time.Time{}},
		{"2026-13-26T10:59:28Z", time.Time{}},
		{"2026-00-26T10:59:28Z", time.Time{}},
		{"2026-02-30T10:59:28Z", time.Time{}},
		{"2025-02-29T10:59:28Z", time.Time{}},
		{"2026-04-00T10:59:28Z", time.Time{}},
		{"2026-04-26T24:00:00Z", time.Time{}},
		{"2026-04-26T10:60:28Z", time.Time{}},
		{"2026-04-26T10:59:60Z", time.Time{}},
		{"2026-4-26T10:59:28Z", time.Time{}},
		{"+026-04-26T10:59:28Z", time.Time{}},
		{"2026-04-26T10:59:28.12a", time.Time{}},
		{" 2026-04-26T10:59:28Z", time.Time{}},
		{"1777201168", time.Time{}},
	}
	for _, tc := range tests {
		got, err := parseTimestamp(tc.in)
		if tc.want.IsZero() {
			if err == nil {
				t.Errorf("parseTimestamp(%q) = %v, want error", tc.in, got)
			}
			continue
		}
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("parseTimestamp(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestFormatTimestamps(t *testing.T) {
	berlin := time.FixedZone("CEST", 2*3600)
	tests := []struct {
		in           time.Time
		micro, milli string
	}{
		{time.Date(2026, 4, 26, 10, 59, 28, 267966123, time.UTC), "2026-04-26T10:59:28.267966Z", "2026-04-26T10:59:28.267Z"},
		{time.Date(2026, 4, 26, 10, 59, 28, 0, time.UTC), "2026-04-26T10:59:28.000000Z", "2026-04-26T10:59:28.000Z"},
		{time.Date(2026, 4, 26, 12, 59, 28, 999999999, berlin), "2026-04-26T10:59:28.999999Z", "2026-04-26T10:59:28.999Z"},
		{time.Date(2026, 1, 1, 1, 0, 0, 1000, berlin), "2025-12-31T23:00:00.000001Z", "2025-12-31T23:00:00.000Z"},
	}
	for _, tc := range tests {
		if got := formatMicro(tc.in); got != tc.micro {
			t.Errorf("formatMicro(%v) = %s, want %s", tc.in, got, tc.micro)
		}
		if got := formatMilli(tc.in); got != tc.milli {
			t.Errorf("formatMilli(%v) = %s, want %s", tc.in, got, tc.milli)
		}
	}
	// What the broker writes it must read back unchanged.
	now := time.Date(2026, 4, 26, 10, 59, 28, 267966000, time.UTC)
	if back, err := parseTimestamp(formatMicro(now)); err != nil || !back.Equal(now) {
		t.Errorf("round trip: %v %v", back, err)
	}
}
