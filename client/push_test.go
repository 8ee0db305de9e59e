package queen_test

import (
	"encoding/json"
	"testing"

	queen "github.com/queen-go/queen/client"
)

func TestResultEnumsRoundTripThroughJSON(t *testing.T) {
	t.Parallel()
	type all struct {
		A queen.AckOutcome
		L queen.LeaseStatus
		T queen.TxnStatus
	}
	in := all{queen.AckBeyondBatch, queen.LeaseExpired, queen.TxnAlreadyCommitted}
	b, err := json.Marshal(in)
	if err != nil || string(b) != `{"A":"beyond_batch","L":"expired","T":"already_committed"}` {
		t.Fatalf("marshal: %s %v", b, err)
	}
	var out all
	if err := json.Unmarshal(b, &out); err != nil || out != in {
		t.Fatalf("unmarshal: %+v %v", out, err)
	}
	if err := json.Unmarshal([]byte(`{"A":"sideways"}`), &out); err == nil {
		t.Fatal("unknown name accepted")
	}
	if queen.AckOutcome(99).String() != "unknown" {
		t.Fatal("out of range outcome")
	}
}
