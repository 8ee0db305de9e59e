package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/mq"
)

// dbHealth remembers the outcome of database calls for GET /api/v1/system/health: the public
// /health says only connected or disconnected, so the driver's text has to be kept somewhere
// an operator can read it without the log (docs/api/admin-api.md §10.2).
type dbHealth struct {
	mu        sync.Mutex
	lastOK    time.Time
	since     time.Time // start of the current outage; zero when none
	lastErr   string
	lastErrAt time.Time
	listening bool // the notification listener holds its connection
}

// observe records the outcome of one database call. Errors that do not make the database
// unavailable (a constraint, one of our QG codes) are answers from a working database; a
// cancelled call says nothing about it.
func (s *Store) observe(err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	now := time.Now()
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	if !errors.Is(err, mq.ErrUnavailable) {
		h.lastOK, h.since = now, time.Time{}
		return
	}
	if h.since.IsZero() {
		h.since = now
	}
	h.lastErr, h.lastErrAt = err.Error(), now
}

// setListening records the notification listener's state.
func (s *Store) setListening(on bool) {
	s.health.mu.Lock()
	s.health.listening = on
	s.health.mu.Unlock()
}

// DatabaseDetail reports the connection's target and what this instance saw of the database,
// without touching it.
func (s *Store) DatabaseDetail() mq.DatabaseDetail {
	d := mq.DatabaseDetail{Schema: s.schema, TLS: "off", Pool: s.Pool(), Listener: mq.ListenerReconnecting}
	if cfg, err := pgconn.ParseConfig(s.dsn); err == nil {
		d.Target = fmt.Sprintf("%s/%s", net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), cfg.Database)
		d.User = cfg.User
		if t := cfg.TLSConfig; t != nil {
			switch {
			case !t.InsecureSkipVerify:
				d.TLS = "verify-full"
			case t.VerifyPeerCertificate != nil:
				d.TLS = "verify-ca"
			default:
				d.TLS = "require"
			}
		}
	}
	h := &s.health
	h.mu.Lock()
	defer h.mu.Unlock()
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	d.LastOK, d.UnavailableSince, d.LastErrorAt = opt(h.lastOK), opt(h.since), opt(h.lastErrAt)
	d.LastError = h.lastErr
	if h.listening {
		d.Listener = mq.ListenerConnected
	}
	return d
}
