package broker

import (
	"context"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
	"github.com/queen-go/queen/internal/tenant"
)

// encryptionTTL bounds how long another instance's configure takes to reach this one's
// encryption decisions (the API reference allows 1 s).
const encryptionTTL = time.Second

// sealer encrypts payloads of queues with encryptionEnabled when a key is loaded
// (docs/api/concepts.md §12), remembering each queue's flag briefly to spare a lookup per push.
type sealer struct {
	key   *encryption.Key
	mu    sync.Mutex
	flags map[string]sealFlag
}

type sealFlag struct {
	on bool
	at time.Time
}

// seal replaces the payloads of items bound for encrypted queues by their envelopes.
func (b *Broker) seal(ctx context.Context, items []*store.PushRow) error {
	s := &b.sealer
	if s.key == nil || len(items) == 0 {
		return nil
	}
	flags, err := s.lookup(ctx, b.store, items)
	if err != nil {
		return err
	}
	for _, it := range items {
		if !flags[it.Queue] {
			continue
		}
		env, err := s.key.Seal(it.Payload)
		if err != nil {
			return err
		}
		it.Payload, it.Encrypted = env, true
	}
	return nil
}

func (s *sealer) lookup(ctx context.Context, st *store.Store, items []*store.PushRow) (map[string]bool, error) {
	now := time.Now()
	out := map[string]bool{}
	var missing []string
	s.mu.Lock()
	for _, it := range items {
		if _, done := out[it.Queue]; done {
			continue
		}
		f, ok := s.flags[tenant.KeyOf(ctx, it.Queue)]
		out[it.Queue] = f.on
		if !ok || now.Sub(f.at) > encryptionTTL {
			missing = append(missing, it.Queue)
		}
	}
	s.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	fresh, err := st.EncryptedQueues(ctx, missing)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.flags == nil {
		s.flags = map[string]sealFlag{}
	}
	for _, q := range missing {
		out[q] = fresh[q] // a queue that does not exist yet is created unencrypted
		s.flags[tenant.KeyOf(ctx, q)] = sealFlag{on: fresh[q], at: now}
	}
	return out, nil
}

// forget drops a queue's remembered flag (queue is its tenant.Key), so a configure applies at
// once on this instance.
func (s *sealer) forget(queue string) {
	s.mu.Lock()
	delete(s.flags, queue)
	s.mu.Unlock()
}

// open decrypts the delivered messages that are flagged encrypted.
func (b *Broker) open(msgs []mq.Message) {
	for i := range msgs {
		m := &msgs[i]
		m.Payload = b.sealer.key.OpenStored(b.log, m.ID, m.Payload, m.Encrypted)
	}
}
