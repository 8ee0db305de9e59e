package queen

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels matched by a *TxnError with errors.Is (ErrLeaseLost is in errors.go).
var (
	// ErrUnknownMessage: an ack named no stored message (QTXN); retrying does not help.
	ErrUnknownMessage = errors.New("queen: transaction acks an unknown message")
	// ErrBeyondBatch: an ack was past the leased batch (QBATCH), a client error.
	ErrBeyondBatch = errors.New("queen: transaction acks beyond the leased batch")
	// ErrQueueFull: a push would exceed a queue's maxSize (QFULL); it may succeed later.
	ErrQueueFull = errors.New("queen: transaction pushes to a full queue")
	// ErrDatabase: any other database error (QDB); the transaction may be retried as it is.
	ErrDatabase = errors.New("queen: transaction failed in the database")
)

// TxnStatus is how a transaction that did not fail ended.
type TxnStatus int

// The successful transaction outcomes.
const (
	// TxnCommitted: the acks and pushes were written now.
	TxnCommitted TxnStatus = iota
	// TxnAlreadyCommitted: the broker rolled back with QDUP because a pushed transactionId
	// was taken, which for deterministic ids means an earlier attempt of the same
	// transaction committed, acks included. Treat it as success and stop retrying.
	TxnAlreadyCommitted
)

var txnStatusNames = []string{"committed", "already_committed"}

// String names the status in snake_case.
func (s TxnStatus) String() string { return nameOf(txnStatusNames, s) }

// MarshalText encodes the status by name.
func (s TxnStatus) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText decodes a name written by MarshalText.
func (s *TxnStatus) UnmarshalText(b []byte) error { return parseName(txnStatusNames, b, s) }

// TxnResult is the outcome of a transaction that did not fail.
type TxnResult struct {
	// TransactionID is minted by the broker for this call; it is no message's key.
	TransactionID string    `json:"transactionId"`
	Status        TxnStatus `json:"status"`
	// Results has one element per ack and pushed item, in order; empty when already committed.
	Results []TxnOpResult `json:"results"`
	// Reason is the broker's QDUP message when Status is TxnAlreadyCommitted.
	Reason string `json:"reason,omitempty"`
}

// TxnOpResult reports one operation of a committed transaction.
type TxnOpResult struct {
	Index         int    `json:"index"`
	Type          string `json:"type"` // "ack" or "push"
	TransactionID string `json:"transactionId"`
	// Push results.
	MessageID   string `json:"messageId,omitempty"`
	Queue       string `json:"queueName,omitempty"`
	PartitionID string `json:"partitionId,omitempty"`
	Duplicate   bool   `json:"duplicate,omitempty"` // repeated inside this transaction; not written again
	// Ack results.
	DLQ              bool `json:"dlq,omitempty"`
	AlreadyCommitted bool `json:"alreadyCommitted,omitempty"`
}

// TxnError is a transaction the broker rolled back: nothing of it was written.
type TxnError struct {
	// Code is the error's first word: QTXN, QLEASE, QBATCH, QFULL or QDB.
	Code string
	// Message is the broker's whole error text.
	Message string
	// TransactionID is the id the broker minted for the call.
	TransactionID string
}

// Error returns the broker's message.
func (e *TxnError) Error() string { return "queen: transaction rolled back: " + e.Message }

// Is matches the sentinel of the rollback cause.
func (e *TxnError) Is(target error) bool {
	switch target {
	case ErrUnknownMessage:
		return e.Code == "QTXN"
	case ErrLeaseLost:
		return e.Code == "QLEASE"
	case ErrBeyondBatch:
		return e.Code == "QBATCH"
	case ErrQueueFull:
		return e.Code == "QFULL"
	case ErrDatabase:
		return e.Code == "QDB"
	}
	return false
}

// Retryable reports whether sending the same transaction again may succeed (QFULL, QDB).
// QLEASE is not: the input will be delivered again and should be processed afresh.
func (e *TxnError) Retryable() bool { return e.Code == "QFULL" || e.Code == "QDB" }

// txnAnswer is the 200 body of POST /api/v1/transaction, commit or rollback.
type txnAnswer struct {
	TransactionID string        `json:"transactionId"`
	Success       bool          `json:"success"`
	Error         string        `json:"error"`
	Results       []TxnOpResult `json:"results"`
}

// result separates commits, QDUP and the other rollbacks.
func (a txnAnswer) result() (TxnResult, error) {
	if a.Success {
		return TxnResult{TransactionID: a.TransactionID, Status: TxnCommitted, Results: a.Results}, nil
	}
	code, _, _ := strings.Cut(a.Error, " ")
	if code == "QDUP" {
		return TxnResult{TransactionID: a.TransactionID, Status: TxnAlreadyCommitted,
			Results: []TxnOpResult{}, Reason: a.Error}, nil
	}
	if a.Error == "" {
		return TxnResult{}, fmt.Errorf("queen: transaction %s failed without a reason", a.TransactionID)
	}
	return TxnResult{}, &TxnError{Code: code, Message: a.Error, TransactionID: a.TransactionID}
}
