package broker

import (
	"context"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// Configure creates or replaces a queue's configuration. Empty namespace/task are derived
// from the name.
func (b *Broker) Configure(ctx context.Context, name string, namespace, task *string, opts mq.QueueOptions) (queueID, partitionID, ns, tk string, err error) {
	ns, tk = mq.DeriveLabels(name)
	if namespace != nil {
		ns = *namespace
	}
	if task != nil {
		tk = *task
	}
	queueID, partitionID, err = b.store.Configure(ctx, name, ns, tk, opts)
	b.sealer.forget(tenant.KeyOf(ctx, name))
	if err == nil && opts.EncryptionEnabled && b.sealer.key == nil {
		b.log.Warn(plaintextWarning, "queue", name)
	}
	return queueID, partitionID, ns, tk, b.refused(ctx, err)
}

// WarnPlaintextQueues logs each queue that asks for encryption while no key is loaded (its
// payloads are stored in plain text).
func (b *Broker) WarnPlaintextQueues(ctx context.Context) {
	names, err := b.store.QueuesWithEncryption(ctx)
	if err != nil {
		return // the database may not be up yet; configure warns again
	}
	for _, n := range names {
		b.log.Warn(plaintextWarning, "queue", n)
	}
}

const plaintextWarning = "encryptionEnabled without QUEEN_ENCRYPTION_KEY: payloads are stored in plain text"
