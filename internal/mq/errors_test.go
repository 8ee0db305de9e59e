package mq

import "testing"

func TestRollbackTextsAreTheReferenceTexts(t *testing.T) {
	cases := []struct {
		err  RollbackError
		want string
	}{
		{RollbackError{CodeDuplicate, []string{"q", "p"}}, `QDUP duplicate messages in queue "q" partition "p"; transaction rolled back`},
		{RollbackError{CodeQueueFull, []string{"q"}}, `QFULL queue "q" is full; transaction rolled back`},
		{RollbackError{CodeUnknownMessage, nil}, "QTXN ack references unknown transactionId; transaction rolled back"},
		{RollbackError{CodeLease, []string{"0190"}}, `QLEASE invalid or expired lease for partition "0190"; transaction rolled back`},
		{RollbackError{CodeBatch, []string{"0190"}}, `QBATCH ack beyond the leased batch in partition "0190"; transaction rolled back`},
		{RollbackError{CodeDatabase, []string{"deadlock detected"}}, "QDB deadlock detected; transaction rolled back"},
		// A DETAIL that names too little never prints a formatting error.
		{RollbackError{CodeDuplicate, []string{"q"}}, `QDUP duplicate messages in queue "q" partition ""; transaction rolled back`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.err.Code, got, c.want)
		}
	}
}

func TestAckTexts(t *testing.T) {
	for code, want := range map[Code]string{
		CodeUnknownMessage: "Message not found",
		CodeLease:          "Invalid or expired lease",
		CodeBatch:          "Message is beyond the leased batch",
		"XX000":            "XX000",
	} {
		if got := code.AckText(); got != want {
			t.Errorf("%s: got %q, want %q", code, got, want)
		}
	}
	if CodeDatabase.IsRollback() || CodeMissingPartitions.IsRollback() || !CodeLease.IsRollback() {
		t.Error("IsRollback: wrong set")
	}
}

func TestNormalizeSubscriptionMode(t *testing.T) {
	for in, want := range map[string]string{"": "", "all": "all", "from_beginning": "all", "new": "new", "new-only": "new-only"} {
		if got, ok := NormalizeSubscriptionMode(in); !ok || got != want {
			t.Errorf("%q: got %q %v, want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"ALL", "from-beginning", "latest"} {
		if _, ok := NormalizeSubscriptionMode(bad); ok {
			t.Errorf("%q accepted", bad)
		}
	}
}
