package broker

import "github.com/google/uuid"

// noLease stands for a lease id that cannot be anyone's lease: a malformed value a client
// sent. Checks against it fail exactly as checks against an unknown lease do.
const noLease = "00000000-0000-0000-0000-000000000000"

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
	return noLease
}

// requiredLeaseRef turns one requiredLeases entry of a transaction into what the store
// compares. Every entry names a lease, so unlike LeaseRef an empty one is not "none": like any
// value that is not a UUID it is a lease nobody holds (transaction.md §4).
func requiredLeaseRef(s string) string {
	if c := CanonicalUUID(s); c != "" {
		return c
	}
	return noLease
}
