package broker

import "github.com/queen-go/queen/internal/mq"

// requiredLeaseRef turns one requiredLeases entry of a transaction into what the store
// compares. Every entry names a lease, so unlike LeaseRef an empty one is not "none": like any
// value that is not a UUID it is a lease nobody holds (docs/api/transaction.md §4).
func requiredLeaseRef(s string) string {
	if c := mq.CanonicalUUID(s); c != "" {
		return c
	}
	return mq.NoLease
}
