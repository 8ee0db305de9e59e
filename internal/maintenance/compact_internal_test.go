package maintenance

import (
	"testing"

	"github.com/queen-go/queen/internal/store"
)

// A set is rewritten only while a horizon is held, nobody holds its tables, and its dead
// versions reach both thresholds.
func TestNeedsCompaction(t *testing.T) {
	for _, c := range []struct {
		name string
		h    store.HotSet
		want bool
	}{
		{"pinned, many dead", store.HotSet{Pinned: true, Live: 200, Dead: 5000}, true},
		{"not pinned: vacuum can remove them", store.HotSet{Live: 200, Dead: 50000}, false},
		{"below the floor", store.HotSet{Pinned: true, Live: 10, Dead: compactMinDead - 1}, false},
		{"below ten per live row", store.HotSet{Pinned: true, Live: 1000, Dead: 9999}, false},
		{"ten per live row", store.HotSet{Pinned: true, Live: 1000, Dead: 10000}, true},
		{"a session holds the tables", store.HotSet{Pinned: true, Live: 200, Dead: 50000, BlockerPID: 42}, false},
	} {
		if got := needsCompaction(c.h); got != c.want {
			t.Errorf("%s: needsCompaction(%+v) = %v, want %v", c.name, c.h, got, c.want)
		}
	}
}
