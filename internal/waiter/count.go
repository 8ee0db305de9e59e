package waiter

// ParkedByQueue counts the parked pops per queue they wait on, for the metrics. Namespace and
// task pops, which wait on no single queue, are counted under "".
func (h *Hub) ParkedByQueue() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int)
	for w := range h.waiters {
		out[w.filter.Queue]++
	}
	return out
}
