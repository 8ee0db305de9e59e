// Package admin is the read side and the operator actions of queen-go: resources, messages,
// the DLQ, traces, status, analytics and consumer groups (docs/api/admin-api.md). It calls the
// store directly; writes that change what the data path may deliver tell the broker through
// DataPath, so parked pops and the broker's caches stay in step.
package admin

import (
	"log/slog"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/store"
)

// DataPath is what the read side's writes need of the data path (*broker.Broker).
type DataPath interface {
	// WakeQueues wakes this instance's parked pops of queues.
	WakeQueues(queues ...string)
	// ForgetQueue drops the broker's cached state of a deleted queue.
	ForgetQueue(name string)
}

// Admin serves the read side. Safe for concurrent use.
type Admin struct {
	store *store.Store
	data  DataPath
	key   *encryption.Key // QUEEN_ENCRYPTION_KEY, nil when none: payloads are shown as stored
	log   *slog.Logger
	clear clearLimits // queue clear's batch size and deadline (SetClearLimits)
}

// New returns the read side over st. key decrypts payloads it shows; data is told of writes.
func New(st *store.Store, data DataPath, key *encryption.Key, log *slog.Logger) *Admin {
	if log == nil {
		log = slog.Default()
	}
	return &Admin{store: st, data: data, key: key, log: log}
}

// openPayload returns a stored payload as a reader should see it (decrypted when possible).
func (a *Admin) openPayload(messageID string, payload []byte, encrypted bool) []byte {
	return a.key.OpenStored(a.log, messageID, payload, encrypted)
}

// newID mints a UUIDv7 for a record the read side writes (trace records).
func newID() string { return uuid.Must(uuid.NewV7()).String() }
