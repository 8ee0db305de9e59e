package queen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// BufferOptions tune a client-side push buffer.
type BufferOptions struct {
	// MaxCount flushes the buffer when this many items wait, and caps the items of one push
	// request (default 100).
	MaxCount int
	// MaxDelay flushes the buffer this long after an item entered it empty (default 1 s).
	MaxDelay time.Duration
	// OnFlush, when set, is called after every flush with its results or its error. Flushes
	// started by the timer have no caller to return to; this is where they report.
	OnFlush func(PushResults, error)
}

// Buffer collects pushes for one queue (and partition) and sends them in batches, trading a
// little latency for far fewer requests. Items keep the order in which they were added. A
// flush that fails with a request error puts its items back in front and is retried by the
// next flush; every item carries a minted transactionId, so a resend after an unknown outcome
// is deduplicated by the broker. Client.Close flushes and closes every open buffer.
type Buffer struct {
	c     *Client
	queue Queue
	opts  BufferOptions

	sendMu sync.Mutex // held for a whole flush, so batches reach the broker in order

	mu     sync.Mutex
	items  []pushItem
	timer  *time.Timer
	closed bool
}

// Buffer returns a push buffer for q. Close it (or the client) to send what remains.
func (q Queue) Buffer(opts BufferOptions) (*Buffer, error) {
	if q.name == "" {
		return nil, errors.New("queen: buffer needs a queue name")
	}
	if opts.MaxCount <= 0 {
		opts.MaxCount = 100
	}
	if opts.MaxDelay <= 0 {
		opts.MaxDelay = time.Second
	}
	b := &Buffer{c: q.c, opts: opts, queue: q}
	if err := q.c.track(b); err != nil {
		return nil, err
	}
	return b, nil
}

// Push adds payloads (values, Item or *Item, as for Queue.Push). When the buffer reaches
// MaxCount it is flushed before Push returns, which also slows a producer down to the
// broker's pace; the error is that flush's.
func (b *Buffer) Push(ctx context.Context, payloads ...any) error {
	items := toItems(b.queue.name, b.queue.partition, payloads)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return ErrClosed
	}
	b.items = append(b.items, items...)
	full := len(b.items) >= b.opts.MaxCount
	if !full && b.timer == nil {
		b.timer = time.AfterFunc(b.opts.MaxDelay, b.flushOnTimer)
	}
	b.mu.Unlock()
	if full {
		_, err := b.Flush(ctx)
		return err
	}
	return nil
}

// Len returns how many items wait to be sent.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.items)
}

// Flush sends every waiting item now, in requests of at most MaxCount items, and returns the
// per-item results of what was sent. On a request error the unsent items stay buffered.
func (b *Buffer) Flush(ctx context.Context) (PushResults, error) {
	b.sendMu.Lock()
	defer b.sendMu.Unlock()
	b.mu.Lock()
	items := b.items
	b.items = nil
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	b.mu.Unlock()

	var all PushResults
	var err error
	for len(items) > 0 {
		n := min(len(items), b.opts.MaxCount)
		var res PushResults
		if res, err = b.c.push(ctx, items[:n]); err != nil {
			b.requeue(items)
			break
		}
		all = append(all, res...)
		items = items[n:]
	}
	if b.opts.OnFlush != nil && (len(all) > 0 || err != nil) {
		b.opts.OnFlush(all, err)
	}
	return all, err
}

// requeue puts unsent items back in front of any added meanwhile, and arms the timer so an
// idle producer's items are still retried.
func (b *Buffer) requeue(items []pushItem) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.items = append(items[:len(items):len(items)], b.items...)
	if !b.closed && b.timer == nil {
		b.timer = time.AfterFunc(b.opts.MaxDelay, b.flushOnTimer)
	}
}

// flushOnTimer is the MaxDelay flush; its outcome goes to OnFlush and the client's logger.
func (b *Buffer) flushOnTimer() {
	if _, err := b.Flush(context.Background()); err != nil {
		b.c.log.Warn("queen: buffered push failed; items kept for the next flush",
			"queue", b.queue.name, "waiting", b.Len(), "err", err)
	}
}

// Close flushes the buffer and refuses further pushes. If the final flush fails, the error
// says how many items were not sent; they stay in the buffer (Len) and Flush may be retried.
func (b *Buffer) Close(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	defer b.c.untrack(b)
	if _, err := b.Flush(ctx); err != nil {
		return fmt.Errorf("queen: close buffer of queue %q: %d item(s) not sent: %w", b.queue.name, b.Len(), err)
	}
	return nil
}
