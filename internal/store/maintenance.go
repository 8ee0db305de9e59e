package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/queen-go/queen/internal/mq"
)

// The maintenance modes (docs/api/operations.md §4.4): one row of maintenance_modes
// (migration 0004) holds both flags; qg_set_maintenance_mode (sql/functions/075) changes one
// and notifies every instance on the wake channel, with a JSON object payload that Listen
// tells apart from the queue wake-ups (JSON arrays).

const sqlMaintenanceModes = `SELECT push, pop, version, changed_at, changed_by, coalesce(changed_on, '') AS changed_on
	FROM maintenance_modes WHERE singleton`

const sqlSetMaintenanceMode = `SELECT push, pop, version, changed_at, changed_by, coalesce(changed_on, '') AS changed_on
	FROM qg_set_maintenance_mode(p_mode => $1, p_enabled => $2, p_by => $3, p_on => $4)`

// maintenanceRow is the row of both statements above, read by column name.
type maintenanceRow struct {
	Push      bool       `db:"push"`
	Pop       bool       `db:"pop"`
	Version   int64      `db:"version"`
	ChangedAt *time.Time `db:"changed_at"`
	ChangedBy *string    `db:"changed_by"`
	ChangedOn string     `db:"changed_on"`
}

func (r maintenanceRow) state() mq.MaintenanceState {
	return mq.MaintenanceState{Push: r.Push, Pop: r.Pop, Version: r.Version, ChangedAt: r.ChangedAt,
		ChangedBy: r.ChangedBy, ChangedOn: r.ChangedOn}
}

// readMaintenance reads the one row of a maintenance statement by name.
func readMaintenance(rows pgx.Rows, err error) (mq.MaintenanceState, error) {
	r, err := readQuery[maintenanceRow]{}.one(rows, err)
	return r.state(), err
}

// setMaintenanceArgs are the parameters of qg_set_maintenance_mode (see sqlCall).
type setMaintenanceArgs struct {
	Mode    string
	Enabled bool
	By      *string
	On      string
}

func (a setMaintenanceArgs) args() []any { return []any{a.Mode, a.Enabled, a.By, a.On} }

// MaintenanceModes reads both maintenance flags.
func (s *Store) MaintenanceModes(ctx context.Context) (mq.MaintenanceState, error) {
	var m mq.MaintenanceState
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) (err error) {
		m, err = readMaintenance(c.Query(ctx, sqlMaintenanceModes))
		return err
	})
	return m, err
}

// SetMaintenanceMode turns one mode on or off, recording who (the token's sub, nil without
// authentication) and where (the WORKER_ID), and notifies every instance's listener on commit.
// It returns the state after the change.
func (s *Store) SetMaintenanceMode(ctx context.Context, mode mq.MaintenanceMode, enabled bool, by *string, on string) (mq.MaintenanceState, error) {
	if mode != mq.PushMaintenance && mode != mq.PopMaintenance {
		return mq.MaintenanceState{}, fmt.Errorf("unknown maintenance mode %q", mode)
	}
	var m mq.MaintenanceState
	a := setMaintenanceArgs{Mode: string(mode), Enabled: enabled, By: by, On: on}
	// Not queryOne: its shortcut for names holding U+0000 would report "nothing changed" as
	// success; PostgreSQL refuses such a text, and the caller hears it.
	err := s.withConn(ctx, func(ctx context.Context, c *pgxpool.Conn) (err error) {
		m, err = readMaintenance(c.Query(ctx, sqlSetMaintenanceMode, a.args()...))
		return err
	})
	return m, err
}

// maintenancePayload is the NOTIFY payload of a maintenance change.
type maintenancePayload struct {
	Maintenance *struct {
		Push    bool  `json:"push"`
		Pop     bool  `json:"pop"`
		Version int64 `json:"version"`
	} `json:"maintenance"`
}

// decodeMaintenance reads a maintenance change from a notification payload; ok is false for
// any other payload.
func decodeMaintenance(payload string) (m mq.MaintenanceState, ok bool) {
	var p maintenancePayload
	if len(payload) == 0 || payload[0] != '{' || json.Unmarshal([]byte(payload), &p) != nil || p.Maintenance == nil {
		return m, false
	}
	return mq.MaintenanceState{Push: p.Maintenance.Push, Pop: p.Maintenance.Pop, Version: p.Maintenance.Version}, true
}
