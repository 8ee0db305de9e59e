package mq

import (
	"strings"

	"github.com/google/uuid"
)

// QueueMode is the consumer group of requests that name none.
const QueueMode = "__QUEUE_MODE__"

// NoLease stands for a lease id that cannot be anyone's lease: a malformed value a client
// sent. Checks against it fail exactly as checks against an unknown lease do.
const NoLease = "00000000-0000-0000-0000-000000000000"

// CanonicalUUID returns s as lower-case canonical UUID text, or "" when s is not a UUID in
// the canonical 36-character form.
func CanonicalUUID(s string) string {
	if len(s) != 36 {
		return ""
	}
	u, err := uuid.Parse(s)
	if err != nil {
		return ""
	}
	return u.String()
}

// LeaseRef turns a client's lease id into what the store compares: "" (none) stays none, a
// malformed value becomes a lease nobody holds.
func LeaseRef(s string) string {
	if s == "" {
		return ""
	}
	if c := CanonicalUUID(s); c != "" {
		return c
	}
	return NoLease
}

// DeriveLabels returns a queue's default namespace and task (docs/api/concepts.md §2.1): namespace is
// the text before the first dot (the whole name without one), task the text between the
// first and second dot ("" without a dot).
func DeriveLabels(name string) (namespace, task string) {
	ns, rest, found := strings.Cut(name, ".")
	if !found {
		return name, ""
	}
	task, _, _ = strings.Cut(rest, ".")
	return ns, task
}
