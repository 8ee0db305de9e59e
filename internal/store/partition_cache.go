package store

import "sync"

// partitionCache remembers the ids of (tenant, queue, partition) names this broker pushed to, so a
// push whose partitions are all known skips resolving their names (qg_partition_ids: about a
// fifth of the database time of a coalesced call of single-message pushes). An id goes stale
// only when its partition is deleted; the push then finds it missing (QG001), drops the
// call's names from the cache and resolves them again. It holds at most maxEntries names and
// starts over when full, so it never grows with the life of the process.
type partitionCache struct {
	mu         sync.RWMutex
	ids        map[pairName]string
	maxEntries int // 0: partitionCacheEntries
}

type pairName struct{ tenant, queue, partition string }

const partitionCacheEntries = 1 << 16

// lookup returns the ids of the named pairs, or nil unless every one is known.
func (c *partitionCache) lookup(tenant string, queues, partitions []string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ids := make([]string, len(queues))
	for i := range queues {
		id, ok := c.ids[pairName{tenant, queues[i], partitions[i]}]
		if !ok {
			return nil
		}
		ids[i] = id
	}
	return ids
}

// remember stores the ids of the named pairs.
func (c *partitionCache) remember(tenant string, queues, partitions, ids []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	limit := c.maxEntries
	if limit == 0 {
		limit = partitionCacheEntries
	}
	if c.ids == nil || len(c.ids)+len(queues) > max(limit, len(queues)) {
		c.ids = make(map[pairName]string, len(queues))
	}
	for i := range queues {
		c.ids[pairName{tenant, queues[i], partitions[i]}] = ids[i]
	}
}

// forget drops the named pairs.
func (c *partitionCache) forget(tenant string, queues, partitions []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range queues {
		delete(c.ids, pairName{tenant, queues[i], partitions[i]})
	}
}
