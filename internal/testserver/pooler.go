package testserver

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/queen-go/queen/internal/config"
	"github.com/queen-go/queen/internal/pgcluster"
)

// EnvPooler names the variable that runs a package's test brokers behind a real PgBouncer in
// transaction mode, started once for the package by Main (docs/deploy.md, "Behind a connection
// pooler"):
//
//   - "transaction": DATABASE_URL names the pooler and DATABASE_POOLER=transaction, without
//     DATABASE_SESSION_URL (no LISTEN: parked pops poll; jobs lead by lease rows);
//   - "session": the same, with DATABASE_SESSION_URL naming the package's database directly.
//
// Only brokers over the package's own database go through the pooler; what a test reads or
// writes with its own pool still goes straight to the server.
const EnvPooler = "QUEEN_TEST_POOLER"

// PoolerSize is the test pooler's default_pool_size: the most server connections it opens for
// the package's database, whatever the number of brokers and their pools.
const PoolerSize = 8

// pooled is the package's pooler, when EnvPooler asks for one.
var pooled struct {
	mode    string // EnvPooler's value
	direct  string // the package's database, as Main got it
	bouncer *pgcluster.PgBouncer
}

// startPooler starts the package's pooler in front of dsn when EnvPooler asks for one.
func startPooler(dsn string) (stop func(), err error) {
	mode := os.Getenv(EnvPooler)
	switch mode {
	case "":
		return func() {}, nil
	case "transaction", "session":
	default:
		return nil, fmt.Errorf("%s=%q: want transaction or session", EnvPooler, mode)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return nil, fmt.Errorf("%s: the test database's URL: %w", EnvPooler, err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("%s: the test database is not on a TCP port (%q)", EnvPooler, u.Host)
	}
	b, err := pgcluster.StartPgBouncer(context.Background(), pgcluster.PgBouncerOptions{
		Host: u.Hostname(), Port: port, DBName: strings.TrimPrefix(u.Path, "/"), PoolSize: PoolerSize})
	if err != nil {
		return nil, err
	}
	pooled.mode, pooled.direct, pooled.bouncer = mode, dsn, b
	return func() {
		b.Stop()
		pooled.bouncer = nil
	}, nil
}

// throughPooler points cfg at the package's pooler when it has one and dsn is the package's
// database.
func throughPooler(cfg *config.Config, dsn string) {
	if pooled.bouncer == nil || dsn != pooled.direct {
		return
	}
	cfg.DatabaseURL, cfg.DatabasePooler = pooled.bouncer.DSN(), "transaction"
	if pooled.mode == "session" {
		cfg.DatabaseSessionURL = dsn
	}
}

// Listens reports whether the package's brokers hold a LISTEN connection: not behind the test
// pooler without a session URL, where wake-ups from PostgreSQL come by polling instead.
func Listens() bool { return pooled.bouncer == nil || pooled.mode == "session" }
