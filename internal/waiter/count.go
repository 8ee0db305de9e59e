package waiter

// QueueOf names a queue among every tenant's: two tenants may each have a queue of one name.
type QueueOf struct {
	Tenant, Queue string
}

// ParkedByQueue counts the parked pops per queue they wait on, for the metrics. Namespace and
// task pops, which wait on no single queue, are counted under their tenant's queue "".
func (h *Hub) ParkedByQueue() map[QueueOf]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[QueueOf]int)
	for w := range h.waiters {
		out[QueueOf{w.filter.Tenant, w.filter.Queue}]++
	}
	return out
}
