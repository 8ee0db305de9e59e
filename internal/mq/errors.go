package mq

import (
	"errors"
	"fmt"
)

// The error catalogue. The SQL functions raise (or, for ack verdicts, return) stable codes
// only, as SQLSTATE values QGnnn with the values a text names in DETAIL; this file is the one
// place where a code becomes the exact text and HTTP status of the API reference
// (docs/api/transaction.md §5, docs/api/concepts.md §8.3, docs/api/README.md §2.5).

// Code is a stable error code shared by SQL and Go.
type Code string

// The codes our PL/pgSQL functions raise or return.
const (
	// CodeMissingPartitions: a push named a queue or partition that does not exist yet. Never
	// reaches a client: the store creates them in a committed step and calls again.
	CodeMissingPartitions Code = "QG001"
	// CodeDuplicate: a transaction's push reused a taken transactionId (QDUP).
	CodeDuplicate Code = "QG002"
	// CodeQueueFull: a transaction's push met a full queue (QFULL).
	CodeQueueFull Code = "QG003"
	// CodeUnknownMessage: an ack names no stored message (QTXN in a transaction).
	CodeUnknownMessage Code = "QG004"
	// CodeLease: an ack's lease is not the live lease (QLEASE in a transaction).
	CodeLease Code = "QG005"
	// CodeBatch: an ack is beyond the leased batch (QBATCH in a transaction).
	CodeBatch Code = "QG006"
	// CodeDatabase: any other database error inside a transaction (QDB).
	CodeDatabase Code = "QDB"
)

// entry is a code's texts: as a transaction's rollback cause (fmt verbs take the DETAIL
// values in order) and as an ack item's verdict.
type entry struct {
	rollback string
	ack      string
}

var catalogue = map[Code]entry{
	CodeDuplicate:      {rollback: `QDUP duplicate messages in queue "%s" partition "%s"; transaction rolled back`},
	CodeQueueFull:      {rollback: `QFULL queue "%s" is full; transaction rolled back`},
	CodeUnknownMessage: {rollback: "QTXN ack references unknown transactionId; transaction rolled back", ack: "Message not found"},
	CodeLease:          {rollback: `QLEASE invalid or expired lease for partition "%s"; transaction rolled back`, ack: "Invalid or expired lease"},
	CodeBatch:          {rollback: `QBATCH ack beyond the leased batch in partition "%s"; transaction rolled back`, ack: "Message is beyond the leased batch"},
	CodeDatabase:       {rollback: "QDB %s; transaction rolled back"},
}

// IsRollback reports whether c is a cause the transaction route reports as a rollback.
func (c Code) IsRollback() bool {
	_, ok := catalogue[c]
	return ok && c != CodeDatabase
}

// AckText is the verdict text of an ack item that failed with code c (docs/api/concepts.md §8.3); a
// code without one is returned as it is, so an unknown code is visible rather than hidden.
func (c Code) AckText() string {
	if e, ok := catalogue[c]; ok && e.ack != "" {
		return e.ack
	}
	return string(c)
}

// RollbackError is a transaction the database rolled back. Its text is the reference's
// rollback message for Code, naming Args (queue, partition) where the message has them.
type RollbackError struct {
	Code Code
	Args []string
}

// Error returns the exact rollback text.
func (e *RollbackError) Error() string {
	tmpl := catalogue[e.Code].rollback
	if tmpl == "" {
		return string(e.Code)
	}
	args := make([]any, 0, len(e.Args))
	for _, a := range e.Args {
		args = append(args, a)
	}
	// Pad missing values so a malformed DETAIL never prints %!s(MISSING).
	for n := countVerbs(tmpl); len(args) < n; {
		args = append(args, "")
	}
	return fmt.Sprintf(tmpl, args...)
}

func countVerbs(s string) int {
	n := 0
	for i := 0; i+1 < len(s); i++ {
		if s[i] == '%' && s[i+1] == 's' {
			n++
		}
	}
	return n
}

// ErrUnavailable means the database could not be reached within the connection timeout, or
// refused or dropped the work (shutdown, recovery, read-only, network failure). Routes answer
// it with StatusUnavailable and TextUnavailable (the transaction route with 500 and QDB).
var ErrUnavailable = errors.New("database unavailable")

// The answer to ErrUnavailable on every route but the transaction route (docs/api/README.md §2.5).
const (
	StatusUnavailable = 503
	TextUnavailable   = "Database unavailable"
)

// ErrBusy means a database call passed a deadline of docs/api/operations.md §9.1, or waited in
// front of the database past DB_REQUEST_TIMEOUT, while the database itself answers (the outage
// probe succeeded): the broker is loaded, the database is not gone (§9.7). Routes answer it
// with 503 TextBusy and Retry-After: 1, the transaction route with 500 TextTimedOut; a push is
// spooled. It is never logged at ERROR.
var ErrBusy = errors.New("server busy")

// The answers to ErrBusy (docs/api/operations.md §9.7).
const (
	TextBusy     = "Server busy"
	TextTimedOut = "Request timed out"
)
