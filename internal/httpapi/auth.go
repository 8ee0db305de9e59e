package httpapi

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/queen-go/queen/internal/auth"
)

// AuthMiddleware enforces authentication (docs/api/operations.md §6) on matched
// routes. It runs before the handler touches the body, so 401 and 403 win
// over 400 and 413 (docs/api/README.md §2.8). Public routes and skip paths pass through;
// every other request needs a valid token whose roles reach the route's
// level. The verified identity is stored in the request context, where the
// write handlers find the subject to stamp as producerSub.
func AuthMiddleware(v *auth.Verifier, log *slog.Logger) func(http.Handler) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			level := RouteLevel(r)
			if level == LevelPublic {
				next.ServeHTTP(w, r)
				return
			}
			// The path is matched as the client sent it, so an encoded "/"
			// inside a queue name cannot pull a route under a skip entry.
			if v.Skipped(r.URL.EscapedPath()) {
				// No check, but a valid token still names the producer of
				// whatever this request writes (docs/api/concepts.md §4.5).
				if _, has := r.Header["Authorization"]; has {
					if id, err := v.VerifyRequest(r); err == nil {
						r = r.WithContext(auth.NewContext(r.Context(), id))
					}
				}
				next.ServeHTTP(w, r)
				return
			}
			id, err := v.VerifyRequest(r)
			if err != nil {
				rejectUnauthenticated(w, r, err, log)
				return
			}
			if id.Access < requiredAccess(level) {
				log.Debug("insufficient permissions", "path", r.URL.Path, "level", level, "access", id.Access, "sub", id.Subject)
				discardBody(r)
				writeError(w, http.StatusForbidden, "Insufficient permissions")
				return
			}
			next.ServeHTTP(w, r.WithContext(auth.NewContext(r.Context(), id)))
		})
	}
}

// requiredAccess maps a route level onto the access a token needs. Anything
// unexpected demands admin, so a new level fails closed.
func requiredAccess(l Level) auth.Access {
	switch l {
	case LevelReadOnly:
		return auth.AccessReadOnly
	case LevelReadWrite:
		return auth.AccessReadWrite
	}
	return auth.AccessAdmin
}

// rejectUnauthenticated answers a failed verification with the verifier's
// status and message. A 500 (JWKS unreachable) is the operator's problem and
// is logged as such; a client's bad token is only worth a debug line.
func rejectUnauthenticated(w http.ResponseWriter, r *http.Request, err error, log *slog.Logger) {
	var ae *auth.Error
	if !errors.As(err, &ae) {
		ae = &auth.Error{Status: http.StatusInternalServerError, Message: "Internal server error", Cause: err}
	}
	if ae.Status >= http.StatusInternalServerError {
		log.Error("authentication failed", "path", r.URL.Path, "err", err)
	} else {
		log.Debug("authentication rejected", "path", r.URL.Path, "err", err)
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	discardBody(r)
	writeError(w, ae.Status, ae.Message)
}

// discardBody reads and drops the unread body (up to the same bound as a 413)
// before a rejection goes out. A client that writes its whole body before
// reading would otherwise see a reset connection instead of the 401 or 403.
// A client that asked for 100-continue is spared: it has not sent the body
// and, answered now, never will.
func discardBody(r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
		return
	}
	// A read error only means the client went away; the answer is the same.
	_, _ = io.CopyN(io.Discard, r.Body, maxDrainBytes)
}

// producerSub is the subject the request's token carries, to be stamped on
// every message the request writes; nil when authentication is off, the path
// was not authenticated, or the token has no sub (docs/api/concepts.md §4.5).
func producerSub(r *http.Request) *string {
	if id, ok := auth.FromContext(r.Context()); ok {
		return id.ProducerSub()
	}
	return nil
}
