package console

import (
	"container/list"
	"sync"
)

// seriesCache keeps the JSON of the most recently asked series, at most
// capacity of them, so that a page reloaded by several operators, or the
// same range asked again before the next scrape, is evaluated once. A key
// names the newest scrape, so new data is never hidden by an old answer.
type seriesCache struct {
	mu       sync.Mutex
	capacity int
	order    *list.List // of *cacheEntry, most recent first
	entries  map[string]*list.Element
}

type cacheEntry struct {
	key  string
	body []byte
}

func newSeriesCache(capacity int) *seriesCache {
	return &seriesCache{capacity: capacity, order: list.New(), entries: map[string]*list.Element{}}
}

// get returns the body cached under key.
func (c *seriesCache) get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).body, true
}

// put caches body under key, evicting the least recently used entry when full.
func (c *seriesCache) put(key string, body []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[key]; ok {
		e.Value.(*cacheEntry).body = body
		c.order.MoveToFront(e)
		return
	}
	c.entries[key] = c.order.PushFront(&cacheEntry{key: key, body: body})
	for c.order.Len() > c.capacity {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*cacheEntry).key)
	}
}
