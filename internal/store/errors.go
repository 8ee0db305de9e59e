package store

import (
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrUnavailable means the database could not be reached within the connection timeout, or
// refused or dropped the work (shutdown, recovery, read-only, network failure).
var ErrUnavailable = errors.New("database unavailable")

// Error codes raised by our own PL/pgSQL functions.
const (
	codeMissingPartitions = "QG001"
	codeDuplicate         = "QG002"
	codeFull              = "QG003"
	codeUnknownAck        = "QG004"
	codeLease             = "QG005"
	codeBatch             = "QG006"
	codeDeadlock          = "40P01" // PostgreSQL's deadlock_detected
)

// classify turns driver errors that mean "the database is not there" into ErrUnavailable.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, cannot connect now
			pgErr.Code == "25006": // read-only transaction (standby, recovery)
			return errors.Join(ErrUnavailable, err)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return errors.Join(ErrUnavailable, err)
	}
	return err
}

// pgCode returns the SQLSTATE of err, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// retryOnDeadlock runs fn up to attempts times while PostgreSQL aborts it as a deadlock victim.
func retryOnDeadlock(attempts int, fn func() error) error {
	err := fn()
	for i := 1; i < attempts && pgCode(err) == codeDeadlock; i++ {
		err = fn()
	}
	return err
}
