package store

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/queen-go/queen/internal/mq"
)

// PostgreSQL's own codes the store reacts to; our functions' codes are mq.Code values.
const (
	codeMissingPartitions = string(mq.CodeMissingPartitions)
	codeDeadlock          = "40P01" // deadlock_detected
	codeLockNotAvailable  = "55P03" // lock_not_available: a lock_timeout ran out
)

// classify turns driver errors that mean "the database is not there" into ErrUnavailable.
func classify(err error) error {
	if err == nil || errors.Is(err, mq.ErrUnavailable) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case strings.HasPrefix(pgErr.Code, "08"), // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, crash, cannot connect now
			pgErr.Code == "25006", // read-only transaction (standby, recovery)
			isServerTimeout(pgErr.Code):
			return errors.Join(mq.ErrUnavailable, err)
		case pgErr.Code == codeTenantLimit:
			// The refusal, and still the database's answer (ServerAnswered): a merged call
			// refused so is retried request by request, and only the one passing the limit fails.
			return errors.Join(limitError(pgErr), err)
		}
		return err
	}
	var netErr net.Error
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || pgconn.SafeToRetry(err) {
		return errors.Join(mq.ErrUnavailable, err)
	}
	return err
}

// isServerTimeout reports a timeout PostgreSQL itself enforced: statement_timeout (57014,
// query_canceled) or lock_timeout (55P03, lock_not_available). Outside transactions they are
// answered as an unavailable database, like the broker's own deadlines
// (docs/api/operations.md §9.1); the transaction route answers them as its QDB rollback.
func isServerTimeout(code string) bool { return code == "57014" || code == "55P03" }

// ServerAnswered reports whether err is an answer of a working PostgreSQL: an error it raised
// itself (a deadlock, a serialization failure, its own statement or lock timeout, a row of bad
// input), not a lost connection, a shutdown, a standby refusing writes, or the broker's own
// deadline. The broker retries a merged call that failed so request by request: the database
// is there, and the cause may be one request's.
func ServerAnswered(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch {
	case strings.HasPrefix(pgErr.Code, "08"), pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03",
		pgErr.Code == "25006": // read-only: a standby refuses every request alike
		return false
	}
	return !errors.Is(err, errDeadline)
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

// rollbackError turns a database error inside a transaction into its rollback cause: one of
// our codes with the values its DETAIL carries (a JSON array of strings), or QDB with the
// database's own message.
func rollbackError(pgErr *pgconn.PgError) *mq.RollbackError {
	code := mq.Code(pgErr.Code)
	if !code.IsRollback() {
		return &mq.RollbackError{Code: mq.CodeDatabase, Args: []string{pgErr.Message}}
	}
	var args []string
	if pgErr.Detail != "" {
		_ = json.Unmarshal([]byte(pgErr.Detail), &args) // a malformed DETAIL names nothing
	}
	return &mq.RollbackError{Code: code, Args: args}
}

// ackVerdict is the text of an ack item's error code as the SQL returns it (nil: success).
func ackVerdict(code *string) *string {
	if code == nil {
		return nil
	}
	t := mq.Code(*code).AckText()
	return &t
}
