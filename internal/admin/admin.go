// Package admin is the read side and the operator actions of queen-go: resources, messages,
// the DLQ, traces, status, analytics and consumer groups (docs/api/admin-api.md). It calls the
// store directly; writes that change what the data path may deliver tell the broker through
// DataPath, so parked pops and the broker's caches stay in step.
package admin

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/queen-go/queen/internal/encryption"
	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/store"
)

// DataPath is what the read side's writes need of the data path (*broker.Broker).
type DataPath interface {
	// WakeQueues wakes this instance's parked pops of queues.
	WakeQueues(ctx context.Context, queues ...string)
	// ForgetQueue drops the broker's cached state of a deleted queue.
	ForgetQueue(ctx context.Context, name string)
}

// storeReads are the reads the read side answers exactly as the store does: no payload to
// decrypt, no page to bound, no write to tell the data path of. Admin embeds them (the
// *store.Store itself), so a request for one goes from the wire straight to the store instead
// of through a method that only forwards.
type storeReads interface {
	// Now is the time the broker works with: the store's clock when tests set one.
	Now() time.Time
	// Overview returns the system summary.
	Overview(ctx context.Context) (mq.Overview, error)
	// ListMessages returns a page of stored messages, newest first (docs/api/admin-api.md §2).
	ListMessages(ctx context.Context, f mq.MessageFilter) ([]mq.ListedMessage, error)
	// ListPartitions returns a page of partitions with their counters, how many match, and
	// when the stats behind the counters were computed (nil before the stats job first ran;
	// docs/api/admin-api.md §1.1).
	ListPartitions(ctx context.Context, f mq.PartitionFilter) ([]mq.PartitionRow, int64, *time.Time, error)
	// StatusQueueMessages lists a queue's messages, newest first; found is false for an
	// unknown queue.
	StatusQueueMessages(ctx context.Context, queue string, limit, offset int) ([]mq.QueueMessage, bool, error)
	// PostgresStats reads PostgreSQL's figures for our database and schema.
	PostgresStats(ctx context.Context) (mq.PostgresStats, error)
	// JobSummaries reads every background job's runs across instances, from the run records
	// each instance writes (docs/api/admin-api.md §10.3; dashboard M12).
	JobSummaries(ctx context.Context) ([]mq.JobSummary, error)
}

// Admin serves the read side. Safe for concurrent use.
type Admin struct {
	storeReads // the store's own answers, promoted as they are
	store      *store.Store
	data       DataPath
	key        *encryption.Key // QUEEN_ENCRYPTION_KEY, nil when none: payloads are shown as stored
	log        *slog.Logger
	clear      clearLimits // queue clear's batch size and deadline (SetClearLimits)
}

// New returns the read side over st. key decrypts payloads it shows; data is told of writes.
func New(st *store.Store, data DataPath, key *encryption.Key, log *slog.Logger) *Admin {
	if log == nil {
		log = slog.Default()
	}
	return &Admin{storeReads: st, store: st, data: data, key: key, log: log}
}

// openPayload returns a stored payload as a reader should see it (decrypted when possible).
func (a *Admin) openPayload(messageID string, payload []byte, encrypted bool) []byte {
	return a.key.OpenStored(a.log, messageID, payload, encrypted)
}

// newID mints a UUIDv7 for a record the read side writes (trace records).
func newID() string { return uuid.Must(uuid.NewV7()).String() }
