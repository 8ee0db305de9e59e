package waiter

import "testing"

func woken(ws ...*Waiter) []bool {
	out := make([]bool, len(ws))
	for i, w := range ws {
		select {
		case <-w.C:
			out[i] = true
		default:
		}
	}
	return out
}

func TestWakeBoundedWakesOldestFirst(t *testing.T) {
	h := NewHub()
	a, b, c := h.Park(Filter{Queue: "q"}), h.Park(Filter{Queue: "q"}), h.Park(Filter{Queue: "q"})
	other := h.Park(Filter{Queue: "other"})
	h.Wake(Signal{Queue: "q", Wake: 2})
	if got := woken(a, b, c, other); got[0] != true || got[1] != true || got[2] || got[3] {
		t.Fatalf("woken %v, want the two oldest waiters of q", got)
	}
}

func TestWakeBoundedSkipsWaitersAlreadyDue(t *testing.T) {
	h := NewHub()
	a, b := h.Park(Filter{Queue: "q"}), h.Park(Filter{Queue: "q"})
	h.Wake(Signal{Queue: "q", Wake: 1})
	h.Wake(Signal{Queue: "q", Wake: 1}) // a is already due: the second wake goes to b
	if got := woken(a, b); !got[0] || !got[1] {
		t.Fatalf("woken %v, want both", got)
	}
}

func TestWakeUnboundedAndLabels(t *testing.T) {
	h := NewHub()
	q := h.Park(Filter{Queue: "orders"})
	ns := h.Park(Filter{Namespace: "billing", ByLabels: true})
	h.Wake(Signal{Queue: "orders"}) // local signal: no labels
	if got := woken(q, ns); !got[0] || got[1] {
		t.Fatalf("woken %v, want only the queue waiter", got)
	}
	h.Wake(Signal{Queue: "billing.x", Namespace: "billing", HasLabels: true})
	if got := woken(q, ns); got[0] || !got[1] {
		t.Fatalf("woken %v, want only the namespace waiter", got)
	}
}
