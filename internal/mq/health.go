package mq

import "time"

// DatabaseDetail is what this instance knows of its database, for the admin-level
// GET /api/v1/system/health (docs/api/admin-api.md §10.2). It carries the connection's target
// and the driver's error text, so it is never shown on a public route (docs/api/operations.md §9.6).
type DatabaseDetail struct {
	Target   string // host:port/database, never the password nor the raw DATABASE_URL
	User     string
	Schema   string
	Embedded bool
	TLS      string // off, require or verify-full (verify-ca for that sslmode)
	Pool     PoolStats
	// Listener is the notification listener's state: connected or reconnecting.
	Listener string
	// LastOK is the last database call that reached the database; UnavailableSince the start
	// of the current outage (nil when none).
	LastOK, UnavailableSince *time.Time
	// LastError is the driver's text of the last database error that made the database
	// unavailable, and LastErrorAt when it happened ("" and nil when none since start).
	LastError   string
	LastErrorAt *time.Time
}

// Listener states.
const (
	ListenerConnected    = "connected"
	ListenerReconnecting = "reconnecting"
	// ListenerPolling: there is no listener, by configuration (behind a transaction pooler
	// without DATABASE_SESSION_URL); wake-ups from other instances come by polling.
	ListenerPolling = "polling"
)
