package app_test

import (
	"syscall"
	"testing"
)

// A PostgreSQL whose every process is stopped with SIGSTOP for 12 s under load, then sent
// SIGCONT (docs/api/operations.md §9.7): pop, ack, transaction and /health answer normally
// within 2 s of the SIGCONT.
func TestStoppedPostgresIsServedWithinTwoSecondsOfSIGCONT(t *testing.T) {
	srv, dataDir := startStoppableServer(t)
	cfg := frozenConfig(t, srv.DSN(), freshSchema("sigcont"))
	cfg.DBPoolSize = 10
	t.Cleanup(func() { signalServer(t, dataDir, syscall.SIGCONT) }) // before the App and the server stop
	checkServedAfterFreeze(t, cfg, func() { signalServer(t, dataDir, syscall.SIGSTOP) },
		func() { signalServer(t, dataDir, syscall.SIGCONT) })
}
