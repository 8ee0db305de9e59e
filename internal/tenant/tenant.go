// Package tenant is the tenant scope of one request (docs/api/concepts.md §14), carried on its
// context from the wire layer, where the token names it, down to the store, which makes every
// statement of the request see only that tenant's queues. It lives below every package that
// reads it, as the deadline budget does, so that the broker's and the read side's interfaces
// need no tenant argument: a call that resolves a queue cannot forget it.
//
// A context without a scope sees every tenant. Only internal callers (background jobs,
// migrations, tests) have one: the wire layer scopes every request it serves, to the default
// tenant when the token names none or authentication is off.
package tenant

import (
	"context"
	"fmt"
)

// Default is the tenant of every queue created without tenancy, of every token without the
// tenant claim, and of every request when authentication is off.
const Default = ""

// MaxLen bounds a tenant name, in bytes.
const MaxLen = 64

type scope struct {
	name string
	all  bool
}

type key struct{}

// With returns ctx scoped to tenant name: every queue of another tenant is invisible to the
// statements run on it.
func With(ctx context.Context, name string) context.Context {
	return context.WithValue(ctx, key{}, scope{name: name})
}

// WithAll returns ctx that sees every tenant (the operator's read routes).
func WithAll(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, scope{all: true})
}

// Of returns the tenant ctx is scoped to; all is true when it sees every tenant (the operator,
// or no scope at all).
func Of(ctx context.Context) (name string, all bool) {
	s, ok := ctx.Value(key{}).(scope)
	if !ok {
		return "", true
	}
	return s.name, s.all
}

// Key returns a key that tells apart the same queue name in two tenants, for maps and wake-ups
// keyed by queue name: the name itself in the default tenant, so a single-tenant broker's keys
// stay what they were.
func Key(tenant, name string) string {
	if tenant == Default {
		return name
	}
	return tenant + "\x00" + name
}

// KeyOf is Key for the tenant ctx is scoped to (the default tenant when it sees every tenant).
func KeyOf(ctx context.Context, name string) string {
	t, _ := Of(ctx)
	return Key(t, name)
}

// Valid checks a tenant name taken from a token: 1 to MaxLen bytes of ASCII letters, digits,
// '.', '_' and '-', so that it can travel in keys, metric labels and log lines unescaped.
func Valid(name string) error {
	if name == "" {
		return fmt.Errorf("empty")
	}
	if len(name) > MaxLen {
		return fmt.Errorf("longer than %d bytes", MaxLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("holds %q: only letters, digits, '.', '_' and '-' are allowed", c)
		}
	}
	return nil
}

// Split undoes Key.
func Split(key string) (tenant, name string) {
	for i := 0; i < len(key); i++ {
		if key[i] == 0 {
			return key[:i], key[i+1:]
		}
	}
	return Default, key
}

// Same reports whether two contexts have the same tenant scope, so that work of one may share a
// database call with work of the other.
func Same(a, b context.Context) bool {
	ta, alla := Of(a)
	tb, allb := Of(b)
	return ta == tb && alla == allb
}
