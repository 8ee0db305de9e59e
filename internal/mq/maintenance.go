package mq

import (
	"errors"
	"time"
)

// MaintenanceMode names one of the two maintenance modes (docs/api/operations.md §4.4).
type MaintenanceMode string

// The maintenance modes.
const (
	// PushMaintenance: pushes are not written to the database (the reference spools them).
	PushMaintenance MaintenanceMode = "push"
	// PopMaintenance: every pop answers 204 at once.
	PopMaintenance MaintenanceMode = "pop"
)

// MaintenanceState is both maintenance flags as stored in the database, with the change that
// set them. Version grows with every change, so a holder can tell a newer state from an older
// one whichever way it arrived (notification, fallback read, own write).
type MaintenanceState struct {
	Push, Pop bool
	Version   int64
	ChangedAt *time.Time // nil until the first change
	ChangedBy *string    // the token's sub; nil with authentication off
	ChangedOn string     // WORKER_ID of the instance that took the change
}

// ErrPushMaintenance refuses a push while push maintenance is on and the file buffer that
// would take it is not wired into the push path (docs/decisions.md): nothing was written, and
// the client should retry later. The wire answers 503.
var ErrPushMaintenance = errors.New("push maintenance mode is on")
