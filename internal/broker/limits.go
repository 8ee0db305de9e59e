package broker

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/queen-go/queen/internal/mq"
	"github.com/queen-go/queen/internal/tenant"
)

// Limits per tenant (docs/api/concepts.md §14, docs/operations.md "Tenants"). The queue and
// stored-message limits are enforced by the database inside the write that would pass them
// (store/tenant_limits.go); the push rate is enforced here, with a token bucket per tenant on
// this instance, against the limits every instance reads from tenant_limits every second (the
// one that stores a change applies it at once).

// OtherTenants is the tenant label of a limit refusal of a tenant not named in the limits
// configuration, so that the label's values are bounded by that configuration.
const OtherTenants = "other"

// limiter holds the limits as last read and this instance's push-rate buckets.
type limiter struct {
	mu      sync.Mutex
	limits  map[string]mq.TenantLimits
	buckets map[string]*bucket
}

// bucket is one tenant's push-rate allowance: up to one second's worth of messages. A push
// takes as many tokens as it has messages; it is allowed when the bucket holds that many, or is
// full (a push larger than one second's allowance then leaves a debt, paid back before the
// next push passes, as Kafka's quotas throttle after the fact).
type bucket struct {
	rate   float64 // messages per second
	tokens float64
	at     time.Time
}

// take takes n tokens at now, or says how long until the push could pass.
func (k *bucket) take(n int, now time.Time) (ok bool, wait time.Duration) {
	if k.rate <= 0 {
		return false, time.Minute
	}
	capacity := max(k.rate, 1)
	if now.After(k.at) {
		k.tokens = min(capacity, k.tokens+now.Sub(k.at).Seconds()*k.rate)
		k.at = now
	}
	need := min(float64(n), capacity)
	if k.tokens < need {
		return false, time.Duration((need - k.tokens) / k.rate * float64(time.Second))
	}
	k.tokens -= float64(n)
	return true, 0
}

// applyLimits takes limits as the current ones; buckets of tenants whose rate changed start
// over full.
func (l *limiter) applyLimits(limits map[string]mq.TenantLimits) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits = limits
	for t, k := range l.buckets {
		if r := limits[t].PushRate; r == nil || float64(*r) != k.rate {
			delete(l.buckets, t)
		}
	}
}

// allowPush takes n messages of the push rate of ctx's tenant at now; a refusal is the
// *mq.LimitError to answer.
func (l *limiter) allowPush(ctx context.Context, n int, now time.Time) error {
	t, all := tenant.Of(ctx)
	if all || t == tenant.Default {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.limits[t].PushRate
	if r == nil {
		return nil
	}
	k := l.buckets[t]
	if k == nil {
		if l.buckets == nil {
			l.buckets = make(map[string]*bucket)
		}
		k = &bucket{rate: float64(*r), tokens: max(float64(*r), 1), at: now}
		l.buckets[t] = k
	}
	if ok, wait := k.take(n, now); !ok {
		return &mq.LimitError{Limit: mq.LimitPushRate, Value: *r, RetryAfter: wait}
	}
	return nil
}

// label is the tenant label of a refusal of tenant t: t when the limits configuration names
// it, OtherTenants otherwise.
func (l *limiter) label(t string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.limits[t]; ok {
		return t
	}
	return OtherTenants
}

// refused counts err when it is a tenant limit's refusal (Config.LimitRefused), and returns it.
func (b *Broker) refused(ctx context.Context, err error) error {
	var le *mq.LimitError
	if b.cfg.LimitRefused != nil && errors.As(err, &le) {
		t, _ := tenant.Of(ctx)
		b.cfg.LimitRefused(b.limits.label(t), le.Limit)
	}
	return err
}

// loadLimits reads every tenant's limits once, within maintenanceReadTimeout; a failure keeps
// the last ones read.
func (b *Broker) loadLimits(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, maintenanceReadTimeout)
	defer cancel()
	limits, err := b.store.TenantLimits(ctx)
	if err != nil {
		if ctx.Err() == nil {
			b.log.Debug("reading the tenant limits", "err", err)
		}
		return
	}
	b.limits.applyLimits(limits)
}

// TenantLimits reads a tenant's limits from the database (none: every field nil).
func (b *Broker) TenantLimits(ctx context.Context, name string) (mq.TenantLimits, error) {
	limits, err := b.store.TenantLimits(ctx)
	if err != nil {
		return mq.TenantLimits{}, err
	}
	b.limits.applyLimits(limits)
	return limits[name], nil
}

// SetTenantLimits stores a tenant's limits (every field nil: none) for every instance; this
// one applies them at once, the others within a second. by is the token's sub.
func (b *Broker) SetTenantLimits(ctx context.Context, name string, l mq.TenantLimits, by *string) error {
	if err := b.store.SetTenantLimits(ctx, name, l, by); err != nil {
		return err
	}
	b.loadLimits(context.WithoutCancel(ctx))
	return nil
}
