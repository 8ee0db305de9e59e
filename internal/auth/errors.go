package auth

import (
	"fmt"
	"net/http"
)

// Error is a rejected request: the HTTP status and the exact message of
// docs/api/operations.md §6.3, which the middleware sends as {"error":Message}. Cause,
// when set, is the underlying failure (a JWKS fetch error, say); it is for the
// log only and never reaches the client.
type Error struct {
	Status  int
	Message string
	Cause   error
}

// Error returns the client-facing message, so that logging an *Error never
// needs a type switch.
func (e *Error) Error() string {
	if e.Cause != nil {
		return e.Message + ": " + e.Cause.Error()
	}
	return e.Message
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.Cause }

// Is reports whether target is an *Error with the same status and message,
// so that a copy carrying a Cause still matches the sentinel it was made from.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status && t.Message == e.Message
}

// withCause returns a copy of e that records cause for the log.
func (e *Error) withCause(cause error) *Error {
	c := *e
	c.Cause = cause
	return &c
}

// The fixed answers of docs/api/operations.md §6.3. Compare with errors.Is.
var (
	// ErrAuthRequired: the request has no Authorization header at all.
	ErrAuthRequired = &Error{Status: http.StatusUnauthorized, Message: "Authentication required"}
	// ErrEmptyToken: the header is present but holds no token.
	ErrEmptyToken = &Error{Status: http.StatusUnauthorized, Message: "Empty token"}
	// ErrInvalidToken: the token is not a well-formed JWT.
	ErrInvalidToken = &Error{Status: http.StatusUnauthorized, Message: "Invalid token"}
	// ErrInvalidSignature: the signature does not verify with the selected key.
	ErrInvalidSignature = &Error{Status: http.StatusUnauthorized, Message: "Invalid token signature"}
	// ErrExpired: exp has passed, beyond the clock skew.
	ErrExpired = &Error{Status: http.StatusUnauthorized, Message: "Token has expired"}
	// ErrNotYetValid: nbf is in the future, beyond the clock skew.
	ErrNotYetValid = &Error{Status: http.StatusUnauthorized, Message: "Token not yet valid"}
	// ErrInvalidIssuer: iss differs from the configured issuer.
	ErrInvalidIssuer = &Error{Status: http.StatusUnauthorized, Message: "Invalid token issuer"}
	// ErrInvalidAudience: aud does not contain the configured audience.
	ErrInvalidAudience = &Error{Status: http.StatusUnauthorized, Message: "Invalid token audience"}
	// ErrInvalidTenant: a genuine token whose tenant claim is present but not a tenant name
	// (tenant.Valid). The bearer is known, so 403; never a silent default tenant.
	ErrInvalidTenant = &Error{Status: http.StatusForbidden, Message: "Invalid tenant claim: expected 1 to 64 letters, digits, '.', '_' or '-'"}
	// ErrJWKSUnavailable: the JWKS could not be fetched and no cached key
	// applies. It is the broker's fault, not the client's, hence 500.
	ErrJWKSUnavailable = &Error{Status: http.StatusInternalServerError, Message: "Failed to fetch JWKS"}
)

// errAlgorithm is the answer for a token signed with an algorithm the broker
// does not accept; expected is the configured JWT_ALGORITHM (possibly "auto").
func errAlgorithm(alg, expected string) *Error {
	return &Error{Status: http.StatusUnauthorized, Message: fmt.Sprintf("Token uses %s, expected %s", alg, expected)}
}

// errUnknownKID is the answer for a kid that is still absent from the JWKS
// after a refresh (or while refreshes for it are rate-limited).
func errUnknownKID(kid string) *Error {
	return &Error{Status: http.StatusUnauthorized, Message: "Unknown key ID: " + kid}
}
