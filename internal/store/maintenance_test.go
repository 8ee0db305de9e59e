package store

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/testkit"
)

// Both modes start off; each change sets one flag, bumps the version and records when, who
// and where; a read gives back what the last change returned.
func TestMaintenanceModesSetAndRead(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "maint_modes")
	ctx := context.Background()
	m, err := s.MaintenanceModes(ctx)
	if err != nil || m.Push || m.Pop || m.Version != 0 || m.ChangedAt != nil || m.ChangedBy != nil || m.ChangedOn != "" {
		t.Fatalf("fresh schema: %+v, %v", m, err)
	}
	alice := "alice"
	steps := []struct {
		mode      mq.MaintenanceMode
		on        bool
		by        *string
		push, pop bool
	}{
		{mq.PushMaintenance, true, &alice, true, false},
		{mq.PopMaintenance, true, nil, true, true},
		{mq.PushMaintenance, false, nil, false, true},
		{mq.PushMaintenance, false, &alice, false, true}, // setting the same value is still a change
		{mq.PopMaintenance, false, nil, false, false},
	}
	for i, st := range steps {
		before := time.Now()
		got, err := s.SetMaintenanceMode(ctx, st.mode, st.on, st.by, "w1")
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got.Push != st.push || got.Pop != st.pop || got.Version != int64(i+1) || got.ChangedOn != "w1" ||
			got.ChangedAt == nil || got.ChangedAt.Before(before.Add(-time.Minute)) || (got.ChangedBy == nil) != (st.by == nil) {
			t.Fatalf("step %d: %+v", i, got)
		}
		read, err := s.MaintenanceModes(ctx)
		if err != nil || read.Push != got.Push || read.Pop != got.Pop || read.Version != got.Version ||
			!read.ChangedAt.Equal(*got.ChangedAt) || read.ChangedOn != "w1" {
			t.Fatalf("step %d: read %+v, %v; set returned %+v", i, read, err, got)
		}
	}
	if _, err := s.SetMaintenanceMode(ctx, "both", true, nil, "w1"); err == nil {
		t.Fatal("an unknown mode was accepted")
	}
}

// A change is notified on the schema's wake channel, on commit, with both flags and the
// version as a JSON object that decodeMaintenance reads and queue wake-ups never match.
func TestMaintenanceChangeNotifiesTheWakeChannel(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "maint_notify")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN "+quoteIdent(s.WakeChannel())); err != nil {
		t.Fatal(err)
	}
	set, err := s.SetMaintenanceMode(ctx, mq.PopMaintenance, true, nil, "w1")
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n, err := conn.WaitForNotification(wctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Channel != s.WakeChannel() {
		t.Fatalf("channel %q, want %q", n.Channel, s.WakeChannel())
	}
	got, ok := decodeMaintenance(n.Payload)
	if !ok || got.Push || !got.Pop || got.Version != set.Version {
		t.Fatalf("payload %s decoded as %+v, %v; want pop on at version %d", n.Payload, got, ok, set.Version)
	}
	for _, p := range []string{`["q","ns","task"]`, `{}`, `{"other":1}`, ``, `not json`} {
		if _, ok := decodeMaintenance(p); ok {
			t.Errorf("payload %q read as a maintenance change", p)
		}
	}
}

// Listen hands maintenance changes to their listener and queue wake-ups to theirs, from the
// one connection.
func TestListenRelaysMaintenanceChanges(t *testing.T) {
	t.Parallel()
	s := migratedSchema(t, "maint_listen")
	ctx, cancel := context.WithCancel(context.Background())
	changes := make(chan mq.MaintenanceState, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Listen(ctx, slog.New(slog.DiscardHandler), Listeners{
			Signal:      func(q QueueSignal) { t.Errorf("queue signal %+v from a maintenance change", q) },
			Maintenance: func(m mq.MaintenanceState) { changes <- m },
			Reconnect:   func() {},
		})
	}()
	defer func() { cancel(); <-done }()
	// The listener connects in the background: change until a change is heard.
	on := false
	testkit.Eventually(t, time.Minute, 50*time.Millisecond, func() error {
		on = !on
		want, err := s.SetMaintenanceMode(context.Background(), mq.PushMaintenance, on, nil, "w1")
		if err != nil {
			return err
		}
		for {
			select {
			case m := <-changes:
				if m.Version == want.Version && m.Push == on {
					return nil
				}
			case <-time.After(100 * time.Millisecond):
				return errNotYet
			}
		}
	})
}

var errNotYet = errors.New("no notification yet")
