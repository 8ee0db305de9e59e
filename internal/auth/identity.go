package auth

import (
	"context"
	"time"
)

// Access is how far a token's roles reach (docs/api/operations.md §6.2). The values are
// ordered, so a token reaches a level when its Access is at least that level.
type Access int

// Access levels, lowest first.
const (
	// AccessNone: the token has no known role and reaches no protected route.
	AccessNone Access = iota
	// AccessReadOnly: the read-only role.
	AccessReadOnly
	// AccessReadWrite: the read-write role, which includes read-only.
	AccessReadWrite
	// AccessAdmin: the admin role, which reaches every level.
	AccessAdmin
)

// String names the access as the API reference names the levels, for logs.
func (a Access) String() string {
	switch a {
	case AccessReadOnly:
		return "read-only"
	case AccessReadWrite:
		return "read-write"
	case AccessAdmin:
		return "admin"
	}
	return "none"
}

// Identity is what a verified token says about its bearer.
type Identity struct {
	// Subject is the token's sub claim, "" when it has none (or it is not a
	// string); it becomes the producerSub of written messages.
	Subject string
	// Roles are the union of the string role claim and the array role claim,
	// in token order, without duplicates.
	Roles []string
	// Access is the highest level the roles reach.
	Access Access
	// Tenant is the token's tenant claim (JWT_TENANT_CLAIM), the default tenant "" without
	// one (docs/api/concepts.md §14).
	Tenant string
	// Operator is set when the roles include the operator role (JWT_ROLE_OPERATOR): the token
	// reads every tenant and writes nothing.
	Operator bool
	// ExpiresAt is the token's exp claim, nil without one (GET /api/v1/auth/me).
	ExpiresAt *time.Time
}

// ProducerSub returns the subject as the broker's producerSub argument: nil
// when the token carries none, so that messages store null rather than "".
func (id Identity) ProducerSub() *string {
	if id.Subject == "" {
		return nil
	}
	s := id.Subject
	return &s
}

type identityKey struct{}

// NewContext returns ctx carrying id, so that handlers below the
// authentication middleware can stamp the token's subject on what they write.
func NewContext(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity stored by NewContext; ok is false when the
// request was not authenticated (authentication off, public or skipped path).
func FromContext(ctx context.Context) (id Identity, ok bool) {
	id, ok = ctx.Value(identityKey{}).(Identity)
	return id, ok
}
