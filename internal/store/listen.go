package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/queen-go/queen/internal/mq"
)

// WakeChannel is the NOTIFY channel our functions signal queues on; per schema, so brokers
// of different schemas in one database do not wake each other.
func (s *Store) WakeChannel() string { return "qg_wake:" + s.schema }

// QueueSignal is one decoded wake-up: the queue and its namespace and task.
type QueueSignal struct{ Queue, Namespace, Task string }

// Listeners are what Listen calls. The wake channel carries two kinds of payload: queue
// wake-ups (a JSON array of name, namespace and task) and maintenance-mode changes (a JSON
// object, see SetMaintenanceMode), so one connection serves both.
type Listeners struct {
	Signal      func(QueueSignal)
	Maintenance func(mq.MaintenanceState) // nil: maintenance changes are ignored
	Reconnect   func()
}

// Listen holds a dedicated connection LISTENing on the wake channel and calls the listeners for
// each notification until ctx ends. When the connection is lost it reconnects with back-off
// and calls l.Reconnect once it is back, since notifications may have been missed meanwhile.
func (s *Store) Listen(ctx context.Context, log *slog.Logger, l Listeners) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			backoff = 100 * time.Millisecond
			if !first {
				l.Reconnect()
			}
			first = false
		}, l)
		if ctx.Err() != nil {
			return
		}
		log.Warn("notification listener lost its connection; reconnecting", "err", err, "backoff", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

func (s *Store) listenOnce(ctx context.Context, onConnected func(), l Listeners) error {
	cfg, err := pgx.ParseConfig(s.dsn)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = s.timeout
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(s.WakeChannel())); err != nil {
		return err
	}
	onConnected()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if m, ok := decodeMaintenance(n.Payload); ok {
			if l.Maintenance != nil {
				l.Maintenance(m)
			}
			continue
		}
		var parts []string
		if json.Unmarshal([]byte(n.Payload), &parts) == nil && len(parts) == 3 {
			l.Signal(QueueSignal{Queue: parts[0], Namespace: parts[1], Task: parts[2]})
		}
	}
}
