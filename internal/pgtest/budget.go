package pgtest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// The test suite's connection budget (README.md, "make test"; docs/operations.md, "Test suite
// connection budget"). The PostgreSQL the tests use is often shared — with other engineers'
// runs, with a developer's broker — and refuses connections beyond max_connections with
// SQLSTATE 53300, which a test otherwise reports as a confusing 503 or a failed migration.
//
// `make test` runs at most Packages test packages at once (go test -p), each opening at most
// PerPackage connections: its test servers' pools (testserver.PoolSize each, plus one LISTEN
// connection), a test's own small pools, and pgtest's short-lived admin connection. Measured
// peaks are in docs/operations.md.
const (
	// Packages is go test -p in the Makefile.
	Packages = 2
	// PerPackage is the most connections one test package holds at once: the largest measured
	// peak (internal/httpapi, 27) rounded up.
	PerPackage = 28
	// Budget is the most connections `make test` holds at once: the two largest measured
	// package peaks (httpapi 27 + broker 14) rounded up, since every other package peaks at 6
	// or less and -p 2 runs two packages at a time, plus internal/app's 4, whose tests run
	// beside those two rather than in a slot (the Makefile: they mostly wait).
	Budget = 45
)

// TooManyClientsCode is the SQLSTATE of "sorry, too many clients already".
const TooManyClientsCode = "53300"

// TooManyClients reports whether err is PostgreSQL refusing a connection for lack of slots.
// The broker's store wraps connection errors as text (mq.ErrUnavailable: …), so the text is
// checked as well as the error's type.
func TooManyClients(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == TooManyClientsCode {
		return true
	}
	return TooManyClientsText(err.Error())
}

// TooManyClientsText reports whether an error text is a 53300 refusal.
func TooManyClientsText(text string) bool {
	return strings.Contains(text, "SQLSTATE "+TooManyClientsCode) || strings.Contains(text, "too many clients")
}

// BudgetMessage explains a 53300 refusal: what the suite may use and what to do about it.
func BudgetMessage(err error) string {
	return fmt.Sprintf("PostgreSQL refused a connection: too many clients (SQLSTATE %s): %v\n"+
		"The test suite's connection budget is %d connections (go test -p %d packages, at most %d each; "+
		"README.md \"make test\", docs/operations.md \"Test suite connection budget\"). The server's "+
		"max_connections, minus what other clients hold, must leave that many free: stop other test runs "+
		"or brokers on that server, run fewer packages at once (-p 1), or raise max_connections.",
		TooManyClientsCode, err, Budget, Packages, PerPackage)
}

// CheckConn fails the test at once, with BudgetMessage, when err is a 53300 refusal; any other
// error is left to the caller. Tests call it on errors from opening or using their own
// connections, so an exhausted server reads as such instead of as a broken feature.
func CheckConn(t testing.TB, err error) {
	t.Helper()
	if TooManyClients(err) {
		t.Fatalf("%s", BudgetMessage(err))
	}
}

// budgetError wraps a setup error that was a 53300 refusal with BudgetMessage.
func budgetError(err error) error {
	if TooManyClients(err) {
		return fmt.Errorf("%w\n%s", err, BudgetMessage(err))
	}
	return err
}
