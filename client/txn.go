package queen

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Transaction acks input messages and pushes output messages in one broker-side database
// transaction: all of it happens, or none of it. Build it with Client.Transaction, then
// Commit. A Transaction is not safe for concurrent use while it is being built.
//
//	res, err := c.Transaction().
//		Ack(in, queen.AckCompleted).
//		Queue("invoices").Partition(in.Partition).Push(queen.Item{
//			Payload:       invoice,
//			TransactionID: queen.DerivedTransactionID(in, "invoice"),
//		}).
//		Commit(ctx)
type Transaction struct {
	c      *Client
	ops    []txnOp
	leases []string
	err    error
}

// txnOp is one operation of the wire "operations" array: an ack, or a nested push.
type txnOp struct {
	Type          string     `json:"type"`
	TransactionID string     `json:"transactionId,omitempty"`
	PartitionID   string     `json:"partitionId,omitempty"`
	ConsumerGroup string     `json:"consumerGroup,omitempty"`
	Status        AckStatus  `json:"status,omitempty"`
	Error         string     `json:"error,omitempty"`
	Items         []pushItem `json:"items,omitempty"`
}

// Transaction starts an empty transaction.
func (c *Client) Transaction() *Transaction { return &Transaction{c: c} }

// Ack adds the acknowledgement of m with status s. m's lease goes into the transaction's
// required leases, so the commit fails with ErrLeaseLost if that lease is no longer live.
func (t *Transaction) Ack(m *Message, s AckStatus) *Transaction {
	if m == nil {
		t.err = errors.Join(t.err, errors.New("queen: transaction ack of a nil message"))
		return t
	}
	return t.AckWith(m.Ack(s))
}

// AckWith adds a prepared acknowledgement (for example with WithError). Its LeaseID goes into
// the required leases rather than onto the operation, as the Queen clients do.
func (t *Transaction) AckWith(a Ack) *Transaction {
	t.ops = append(t.ops, txnOp{Type: "ack", TransactionID: a.TransactionID, PartitionID: a.PartitionID,
		ConsumerGroup: a.ConsumerGroup, Status: a.Status, Error: a.Error})
	return t.RequireLease(a.LeaseID)
}

// RequireLease adds lease ids under which the acked messages were popped; Ack does this
// itself. Empty and repeated ids are skipped.
func (t *Transaction) RequireLease(ids ...string) *Transaction {
	for _, id := range ids {
		if id != "" && !slices.Contains(t.leases, id) {
			t.leases = append(t.leases, id)
		}
	}
	return t
}

// TxnQueue is the push target of a transaction: Queue, then optionally Partition, then Push.
type TxnQueue struct {
	t *Transaction
	q Queue
}

// Queue starts a push to the named queue; finish it with Push.
func (t *Transaction) Queue(name string) TxnQueue { return TxnQueue{t: t, q: t.c.Queue(name)} }

// Partition narrows the push to one partition ("Default" when not called).
func (q TxnQueue) Partition(name string) TxnQueue {
	q.q = q.q.Partition(name)
	return q
}

// Push adds payloads (values, Item or *Item) and returns the transaction. Items without a
// TransactionID get a minted one, so a retried commit whose first attempt went through
// reports TxnAlreadyCommitted instead of writing the pushes twice. Prefer
// DerivedTransactionID, which also covers a retry by a new process after a crash.
func (q TxnQueue) Push(payloads ...any) *Transaction {
	if q.q.name == "" {
		q.t.err = errors.Join(q.t.err, errors.New("queen: transaction push needs a queue name"))
		return q.t
	}
	q.t.ops = append(q.t.ops, txnOp{Type: "push", Items: toItems(q.q.name, q.q.partition, payloads)})
	return q.t
}

// derivedNamespace scopes derived ids, so they never collide with v5 ids of other programs.
var derivedNamespace = uuid.MustParse("5f0b8c1e-2a4d-4c7e-9b1a-6d3e2f4a5b6c")

// DerivedTransactionID returns a transactionId determined by the input message (its
// partition and transactionId) and labels naming the output (the stage, or an index when one
// input yields several outputs). Every attempt to process the same input derives the same
// ids, so a transaction retried after an unknown outcome, even by another process, either
// commits or reports TxnAlreadyCommitted: its outputs are never written twice.
func DerivedTransactionID(in *Message, labels ...string) string {
	parts := append([]string{in.PartitionID, in.TransactionID}, labels...)
	return uuid.NewSHA1(derivedNamespace, []byte(strings.Join(parts, "\x00"))).String()
}

// Commit sends the transaction. A commit returns TxnCommitted; QDUP (its pushes were already
// written, normally by an earlier attempt of this very transaction) returns
// TxnAlreadyCommitted with a nil error; every other rollback is a *TxnError.
func (t *Transaction) Commit(ctx context.Context) (TxnResult, error) {
	if t.err != nil {
		return TxnResult{}, t.err
	}
	if len(t.ops) == 0 {
		return TxnResult{}, errors.New("queen: transaction has no operations")
	}
	body := struct {
		Operations     []txnOp  `json:"operations"`
		RequiredLeases []string `json:"requiredLeases,omitempty"`
	}{t.ops, t.leases}
	var ans txnAnswer
	if _, err := t.c.do(ctx, call{method: http.MethodPost, path: "/api/v1/transaction", body: body}, &ans); err != nil {
		return TxnResult{}, err
	}
	return ans.result()
}
