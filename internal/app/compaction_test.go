package app

import (
	"testing"
	"time"
)

// HOT_COMPACTION=off keeps the maintenance job from checking the hot sets at all; auto checks
// them every second.
func TestHotCompactionInterval(t *testing.T) {
	if got := hotCompactionInterval("auto"); got != time.Second {
		t.Errorf("auto: %v", got)
	}
	if got := hotCompactionInterval("off"); got != 0 {
		t.Errorf("off: %v, want 0 (never)", got)
	}
}
