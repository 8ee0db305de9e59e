// Package queen is the Go client for Queen MQ compatible brokers, queen-go first among them.
//
// It follows the fluent grammar the Queen clients share, in idiomatic Go:
//
//	c, err := queen.New("http://localhost:6632")
//	orders := c.Queue("orders")
//	_, err = orders.Create(ctx, queen.LeaseTime(30*time.Second), queen.RetryLimit(5))
//	res, err := orders.Partition("customer-42").Push(ctx, map[string]any{"orderId": 1})
//	err = orders.Consume(ctx, func(ctx context.Context, m *queen.Message) error {
//		return process(m.Data)
//	}, queen.ConsumeOptions{Concurrency: 4, BatchSize: 10})
//
// Every call takes a context. Requests that fail with a 5xx status or a network error are
// retried with exponential backoff and jitter, moving to the next base URL when several are
// configured; 4xx answers are never retried. Pushes and transaction pushes carry a
// client-minted transactionId when the caller gives none, so that a retried request is
// deduplicated by the broker instead of written twice.
//
// Errors: a non-success HTTP answer is an *HTTPError; a transaction rollback is a *TxnError
// that matches ErrUnknownMessage, ErrLeaseLost, ErrBeyondBatch, ErrQueueFull or ErrDatabase
// with errors.Is. A transaction rejected because its pushes were already written (QDUP) is
// not an error: Commit reports TxnAlreadyCommitted, the outcome of a retried commit whose
// first attempt went through.
package queen
