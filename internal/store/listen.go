package store

import (
	"context"
	"encoding/json"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// WakeChannel is the NOTIFY channel our functions signal queues on; per schema, so brokers
// of different schemas in one database do not wake each other.
func (s *Store) WakeChannel() string { return "qg_wake:" + s.schema }

// QueueSignal is one decoded wake-up: the queue and its namespace and task.
type QueueSignal struct{ Queue, Namespace, Task string }

// Listen holds a dedicated connection LISTENing on the wake channel and calls onSignal for
// each notification until ctx ends. When the connection is lost it reconnects with back-off
// and calls onReconnect once it is back, since signals may have been missed meanwhile.
func (s *Store) Listen(ctx context.Context, log *slog.Logger, onSignal func(QueueSignal), onReconnect func()) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			s.setListening(true)
			backoff = 100 * time.Millisecond
			if !first {
				onReconnect()
			}
			first = false
		}, onSignal)
		s.setListening(false)
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

func (s *Store) listenOnce(ctx context.Context, onConnected func(), onSignal func(QueueSignal)) error {
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
		var parts []string
		if json.Unmarshal([]byte(n.Payload), &parts) == nil && len(parts) == 3 {
			onSignal(QueueSignal{Queue: parts[0], Namespace: parts[1], Task: parts[2]})
		}
	}
}
