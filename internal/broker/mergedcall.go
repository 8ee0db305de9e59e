package broker

import (
	"errors"
	"fmt"

	"github.com/queen-go/queen/internal/store"
)

// What every merged call promises, whatever its kind (a coalesced push, coalesce.go; a merged
// pop, ack or transaction, merge.go), is here (docs/design.md, "Merged calls: every request
// answered, one retry policy"):
//
//   - every request the call took is answered, and its gate slot or lane given back, whatever
//     the call does: returns, returns without answering some request, panics, or ends its
//     goroutine (runtime.Goexit). golang.org/x/sync/singleflight's doCall is the model: the
//     release and the answers are deferred, and a panic is answered and then raised again, so
//     it is never swallowed;
//   - a call that fails as a whole is retried request by request under one policy (retryAlone).

// errCallPanicked answers the requests of a merged call whose leader panicked. It is an
// internal error, not an unavailable database: the wire layer answers it 500 (the transaction
// route its 500), as it answers the panicking leader's own request, and a push is not spooled
// (a replay would only run into the same defect). What the call had written is unknown, as
// after any error past the commit; nothing is retried.
var errCallPanicked = errors.New("merged database call panicked")

// errCallUnanswered answers the requests a merged call left unanswered without panicking: a
// defect of the call's code (a path that returns early) or a goroutine ended by
// runtime.Goexit. Answered like errCallPanicked.
var errCallUnanswered = errors.New("merged database call ended without answering the request")

// panicError is the answer of the requests of a call that panicked with v.
func panicError(v any) error { return fmt.Errorf("%w: %v", errCallPanicked, v) }

// lead makes run's call for the requests it took, holding the slot that leave gives back, and
// lets every request go whatever run does: the requests run did not answer get
// errCallUnanswered, or errCallPanicked when run panicked, and the panic then goes on up the
// leader's own goroutine (a request's: the HTTP layer logs it and answers 500). The slot is
// given back last, once every request is answered.
func lead[T any](call []*mergeJob[T], leave func(), run func(call []*mergeJob[T])) {
	defer leave()
	defer func() {
		// Re-raised from this same deferred call, the panic keeps the frames that raised it
		// on the stack, so the stack the HTTP layer logs shows where it began.
		v := recover()
		err := errCallUnanswered
		if v != nil {
			err = panicError(v)
		}
		for _, j := range call {
			if !j.answered() {
				j.answer(err)
			}
		}
		if v != nil {
			panic(v)
		}
	}()
	run(call)
}

// retryAlone is the one retry policy of merged calls: it reports whether the requests of a
// call of n requests that failed as a whole with err are each run again, alone, under their
// own deadlines (true), or each answered err (false).
//
// A call is retried request by request only when PostgreSQL itself answered the failure
// (store.ServerAnswered: a constraint or bad input, a deadlock, a serialization failure, its
// own statement or lock timeout): the database is there, nothing was committed, and the cause
// may be one request's, which must not fail the others. Any other failure — no connection, a
// shutdown, a standby, the broker's own deadline, a failure that may have come after the
// commit, or an answer the broker cannot split — fails every request with the call's error:
// each would have failed the same alone, a second try would only pass the same deadline
// again, and a call whose outcome is unknown is never written twice. A call of one request is
// never retried.
func retryAlone(n int, err error) bool {
	return n > 1 && store.ServerAnswered(err)
}
