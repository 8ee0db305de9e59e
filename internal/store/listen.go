package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/queen-go/queen/internal/mq"
)

// WakeChannel is the NOTIFY channel our functions signal queues on; per schema, so brokers
// of different schemas in one database do not wake each other.
func (s *Store) WakeChannel() string { return "qg_wake:" + s.schema }

// QueueSignal is one decoded wake-up: the queue's tenant, the queue and its namespace and task.
type QueueSignal struct{ Tenant, Queue, Namespace, Task string }

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
//
// Behind a transaction pooler LISTEN needs a direct session: it dials DATABASE_SESSION_URL,
// and without one it returns at once, saying so in the log: parked pops then find other
// instances' work by their fallback polls and maintenance changes by their re-read.
func (s *Store) Listen(ctx context.Context, log *slog.Logger, l Listeners) {
	if s.sessionDSN == "" {
		s.health.mu.Lock()
		s.health.polling = true
		s.health.mu.Unlock()
		log.Info("behind a transaction pooler without DATABASE_SESSION_URL: no LISTEN; parked pops poll for " +
			"other instances' pushes (at most POP_WAIT_MAX_INTERVAL_MS apart) and maintenance changes are re-read every second")
		return
	}
	backoff := 100 * time.Millisecond
	first := true
	failing := false // logged once per outage, not once per reconnect attempt
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			s.setListening(true)
			backoff = 100 * time.Millisecond
			if failing {
				log.Info("notification listener reconnected")
				failing = false
			}
			if !first {
				l.Reconnect()
			}
			first = false
		}, l)
		s.setListening(false)
		if ctx.Err() != nil {
			return
		}
		if !failing {
			log.Warn("notification listener lost its connection; reconnecting", "err", err)
			failing = true
		} else {
			log.Debug("notification listener still cannot reconnect", "err", err, "backoff", backoff)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// listenOnce holds one listening connection until it fails or ctx ends. Every step has a
// deadline on the broker's clock (docs/api/operations.md §9.1): connecting and LISTEN
// DB_CONNECTION_TIMEOUT; and after DB_REQUEST_TIMEOUT without a notification the connection
// must answer a ping within DB_CONNECTION_TIMEOUT, or it is given up and a new one is opened.
// A connection to a frozen host or through a black hole otherwise looks exactly like a quiet
// one, and the listener would wait on it forever, missing every wake-up once the database is
// back on a fresh connection.
func (s *Store) listenOnce(ctx context.Context, onConnected func(), l Listeners) error {
	cfg, err := pgx.ParseConfig(s.sessionDSN)
	if err != nil {
		return err
	}
	cfg.ConnectTimeout = s.timeout
	cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout)
		defer cancel()
		_ = conn.Close(cctx) // the session ends either way
	}()
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	_, err = conn.Exec(lctx, "LISTEN "+quoteIdent(s.WakeChannel()))
	cancel()
	if err != nil {
		return err
	}
	onConnected()
	for {
		wctx, cancel := context.WithTimeout(ctx, s.requestTimeout)
		n, err := conn.WaitForNotification(wctx)
		quiet := err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) && !conn.IsClosed()
		cancel()
		if quiet {
			// A read timeout leaves the connection usable: check that the server still answers.
			pctx, cancel := context.WithTimeout(ctx, s.timeout)
			err = conn.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("listener connection stopped answering: %w", err)
			}
			continue
		}
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
		// [name, namespace, task, tenant]; an instance of before tenants sends three.
		if json.Unmarshal([]byte(n.Payload), &parts) == nil && (len(parts) == 3 || len(parts) == 4) {
			qs := QueueSignal{Queue: parts[0], Namespace: parts[1], Task: parts[2]}
			if len(parts) == 4 {
				qs.Tenant = parts[3]
			}
			l.Signal(qs)
		}
	}
}
