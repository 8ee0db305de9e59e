package store

// The overview at dashboard scale (docs/api/dashboard.md, scale section: the first data within
// 1 s at 10,000 queues). Slow to seed, so it runs only with QG_SCALE=1:
//
//	QG_SCALE=1 go test -count=1 -p 1 ./internal/store -run TestOverviewScale -v

import (
	"os"
	"testing"
	"time"

	"github.com/queen-go/queen/internal/mq"
)

func TestOverviewScale(t *testing.T) {
	if os.Getenv("QG_SCALE") != "1" {
		t.Skip("set QG_SCALE=1 to seed 10,000 queues")
	}
	b := setup(t)
	const queues = 10000
	// One partition per queue, 10 messages each, queue mode 3 messages in; all in one statement each.
	b.exec(`INSERT INTO queues (id, name, namespace, task)
		SELECT gen_random_uuid(), 'scale-' || i, 'ns' || (i % 10), 'task' || (i % 7) FROM generate_series(1, $1::int) i`, queues)
	b.exec(`INSERT INTO partitions (id, queue_id, name) SELECT gen_random_uuid(), q.id, 'Default' FROM queues q`)
	b.exec(`INSERT INTO partition_heads (partition_id, last_position, last_message_at)
		SELECT p.id, 10, $1::timestamptz FROM partitions p`, b.clock.Now())
	b.exec(`INSERT INTO messages (partition_id, position, id, transaction_id, payload, created_at)
		SELECT p.id, n, gen_random_uuid(), 'tx' || n, '{}', $1::timestamptz - (10 - n) * interval '1 minute'
		FROM partitions p CROSS JOIN generate_series(1, 10) n`, b.clock.Now())
	b.exec(`INSERT INTO consumers (partition_id, consumer_group, queue_id, cursor)
		SELECT p.id, $1, p.queue_id, 3 FROM partitions p`, mq.QueueMode)
	b.exec(`ANALYZE`)

	measure := func(label string) mq.Overview {
		var o mq.Overview
		var best time.Duration
		for i := range 3 {
			start := time.Now()
			var err error
			if o, err = b.s.Overview(b.ctx); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); i == 0 || d < best {
				best = d
			}
		}
		t.Logf("%s: overview over %d queues, best of 3: %v", label, queues, best)
		return o
	}
	measure("before the stats job ran")
	start := time.Now()
	b.refreshStats()
	t.Logf("stats refresh (background job, not the request): %v", time.Since(start))
	o := measure("after a stats run")
	if o.Queues != queues || o.Partitions != queues || o.Counters.Total != 10*queues ||
		o.Counters.Unconsumed != 7*queues || o.OffsetLag.Max != 7 {
		t.Fatalf("overview %+v", o)
	}

	// A hot partition: 200,000 older messages in a partition written within the last minute.
	// The live count of the last minute's messages reads every message of such a partition
	// (no index on created_at); this shows what that costs.
	b.exec(`INSERT INTO messages (partition_id, position, id, transaction_id, payload, created_at)
		SELECT p.id, 10 + n, gen_random_uuid(), 'hot' || n, '{}', $1::timestamptz - interval '1 hour'
		FROM (SELECT id FROM partitions ORDER BY id LIMIT 1) p CROSS JOIN generate_series(1, 200000) n`, b.clock.Now())
	b.exec(`ANALYZE messages`)
	measure("with a hot partition of 200,000 messages")
}
