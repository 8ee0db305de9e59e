package broker

import (
	"context"

	"github.com/queen-go/queen/internal/tenant"
	"github.com/queen-go/queen/internal/waiter"
)

// Hooks for the read side's writes that change what the data path may deliver or how it
// writes (internal/admin): they keep the broker's in-memory state in step with the database.

// WakeQueues wakes the parked pops of queues on this instance (other instances hear the
// NOTIFY the writer's SQL function sends): a seek back or a cleared lease makes messages
// deliverable again. The queues are of ctx's tenant.
func (b *Broker) WakeQueues(ctx context.Context, queues ...string) {
	t, _ := tenant.Of(ctx)
	for _, q := range queues {
		b.hub.Wake(waiter.Signal{Tenant: t, Queue: q})
	}
}

// ForgetQueue drops what the broker remembers of a queue (its encryption flag), since a queue
// of the same name created later starts unencrypted.
func (b *Broker) ForgetQueue(ctx context.Context, name string) {
	b.sealer.forget(tenant.KeyOf(ctx, name))
}
