package mq

import (
	"fmt"
	"strconv"
	"time"
)

// TenantLimits are one tenant's limits (docs/api/concepts.md §14); nil is no limit of that
// kind.
type TenantLimits struct {
	// MaxQueues bounds the queues the tenant may have.
	MaxQueues *int64 `json:"maxQueues"`
	// MaxMessages bounds the unconsumed messages the tenant may store, counted as a queue's
	// maxSize counts them, over all its queues.
	MaxMessages *int64 `json:"maxMessages"`
	// PushRate bounds the messages per second the tenant may push, on each instance.
	PushRate *int64 `json:"pushRate"`
}

// Empty reports whether l limits nothing.
func (l TenantLimits) Empty() bool {
	return l.MaxQueues == nil && l.MaxMessages == nil && l.PushRate == nil
}

// The kinds of tenant limit, as LimitError names them.
const (
	LimitQueues   = "queues"
	LimitMessages = "messages"
	LimitPushRate = "push rate"
)

// LimitError is a request refused because it would pass one of its tenant's limits: nothing
// of it was written. Routes answer it with 429, Retry-After and its text.
type LimitError struct {
	Limit string // LimitQueues, LimitMessages or LimitPushRate
	Value int64  // the limit
	// RetryAfter is when trying again may succeed: when the push rate's allowance has refilled;
	// for the stored limits, a guess (consumers or an operator must make room first).
	RetryAfter time.Duration
}

// Error is the answer's text, naming the limit: "Tenant limit reached: queues (10)".
func (e *LimitError) Error() string {
	v := strconv.FormatInt(e.Value, 10)
	if e.Limit == LimitPushRate {
		v += "/s"
	}
	return fmt.Sprintf("Tenant limit reached: %s (%s)", e.Limit, v)
}

// RetryAfterSeconds is RetryAfter in whole seconds, at least 1, for the Retry-After header.
func (e *LimitError) RetryAfterSeconds() int64 {
	s := int64((e.RetryAfter + time.Second - 1) / time.Second)
	return max(s, 1)
}
