package importer

import (
	"strings"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	got := progressLine(250, 1000, 5*time.Second, true)
	for _, want := range []string{"[#######.......................]", " 25%", "250/1000 rows", "50 rows/s", "15s left"} {
		if !strings.Contains(got, want) {
			t.Errorf("bar %q lacks %q", got, want)
		}
	}
	got = progressLine(0, 10, 0, false)
	if !strings.HasPrefix(got, "progress: ") || !strings.Contains(got, "? left") || strings.Contains(got, "[") {
		t.Errorf("line %q: want a plain line with an unknown time left", got)
	}
}
