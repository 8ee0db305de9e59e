package broker

import "github.com/queen-go/queen/internal/waiter"

// Hooks for the read side's writes that change what the data path may deliver or how it
// writes (internal/admin): they keep the broker's in-memory state in step with the database.

// WakeQueues wakes the parked pops of queues on this instance (other instances hear the
// NOTIFY the writer's SQL function sends): a seek back or a cleared lease makes messages
// deliverable again.
func (b *Broker) WakeQueues(queues ...string) {
	for _, q := range queues {
		b.hub.Wake(waiter.Signal{Queue: q})
	}
}

// ForgetQueue drops what the broker remembers of a queue (its encryption flag), since a queue
// of the same name created later starts unencrypted.
func (b *Broker) ForgetQueue(name string) { b.sealer.forget(name) }
