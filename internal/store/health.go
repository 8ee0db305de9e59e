package store

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/mq"
)

// dbHealth holds what GET /api/v1/system/health reports beyond the outage tracker's record
// of the database calls (outage.go).
type dbHealth struct {
	mu        sync.Mutex
	listening bool // the notification listener holds its connection
	polling   bool // there is no listener (behind a pooler without a session URL)
}

// setListening records the notification listener's state.
func (s *Store) setListening(on bool) {
	s.health.mu.Lock()
	s.health.listening = on
	s.health.mu.Unlock()
}

// target names the servers a connection string lets the broker connect to, in the order they
// are tried (a multi-host DATABASE_URL lists a primary and its standbys), and the database:
// "h1:5432,h2:5432/queen".
func target(cfg *pgconn.Config) string {
	hosts := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
	for _, f := range cfg.Fallbacks {
		h := net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
		if !slices.Contains(hosts, h) { // one host is tried with TLS and without: one name
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",") + "/" + cfg.Database
}

// DatabaseDetail reports the connection's target and what this instance saw of the database,
// without touching it.
func (s *Store) DatabaseDetail() mq.DatabaseDetail {
	d := mq.DatabaseDetail{Schema: s.schema, TLS: "off", Pool: s.Pool(), Listener: mq.ListenerReconnecting}
	if cfg, err := pgconn.ParseConfig(s.dsn); err == nil {
		d.Target = target(cfg)
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
	opt := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		return &t
	}
	o := s.outage
	o.mu.Lock()
	var lastOK time.Time
	if n := o.lastOK.Load(); n != 0 {
		lastOK = time.Unix(0, n)
	}
	d.LastOK, d.LastErrorAt, d.LastError = opt(lastOK), opt(o.lastErrAt), o.lastErr
	if o.isDown() {
		d.UnavailableSince = opt(o.since)
	}
	o.mu.Unlock()
	s.health.mu.Lock()
	switch {
	case s.health.listening:
		d.Listener = mq.ListenerConnected
	case s.health.polling:
		d.Listener = mq.ListenerPolling
	}
	s.health.mu.Unlock()
	return d
}
