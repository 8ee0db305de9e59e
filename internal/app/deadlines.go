package app

import (
	"net/http"

	"github.com/queen-go/queen/internal/budget"
	"github.com/queen-go/queen/internal/store"
)

// withDeadlines gives every request one database deadline budget (docs/api/operations.md §9.1):
// all its waits in front of the database share DB_CONNECTION_TIMEOUT and all its statements
// DB_REQUEST_TIMEOUT, however many calls it makes. The clocks start only when the request
// first waits for the database, not when it arrives. Once the request is done, a request the
// database failed counts towards the outage summary the store logs when the outage ends.
//
// It wraps the request's context, never the ResponseWriter, so nothing the handlers or the
// server ask of the writer (http.MaxBytesReader, ResponseController) changes.
func withDeadlines(st *store.Store, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := budget.Request(r.Context())
		next.ServeHTTP(w, r.WithContext(ctx))
		st.Answered(ctx)
	})
}
