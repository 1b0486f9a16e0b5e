package controller

import (
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// pidCache remembers the activation the cluster answered for each
// identity, so that a send does not ask the owner again. Proto.Actor's
// Cluster.Get keeps nothing: every call is a request to the owner's
// placement actor and a wait for its answer, and that one actor answers
// every member's lookups and spawns every activation in turn. A node actor
// telling its hundred volumes of a written status, one Get after the
// other, held its mailbox for half a second in a fleet start (the
// attaches it was to write waited behind), and a busy placement actor
// stretched each Get to tens of milliseconds.
//
// An entry is dropped when the activation it names stops (its owner
// broadcasts cluster.ActivationTerminated to every member; the member
// itself publishes ActivationTerminating), on every topology change (an
// identity may have moved), and after ttl in any case: a broadcast is a
// remote message, delivered at most once, and a lost one must not keep an
// identity unreachable. Until then a send to a stopped activation is lost,
// as any remote message may be and as a send racing an uncached Get's
// answer was already: every protocol of the controller sends again
// (retries, resyncs, the agents' reports). A lookup that an eviction
// raced is not kept (gen): it may name the activation just evicted.
type pidCache struct {
	ttl time.Duration
	now func() time.Time

	mu  sync.Mutex
	m   map[string]cachedPID
	gen uint64 // bumped by every eviction
}

type cachedPID struct {
	pid *actor.PID
	at  time.Time
}

// pidCacheTTL bounds how long an entry is trusted without news of its
// activation.
const pidCacheTTL = 5 * time.Second

func newPIDCache(ttl time.Duration, now func() time.Time) *pidCache {
	return &pidCache{ttl: ttl, now: now, m: map[string]cachedPID{}}
}

// get returns the cached activation of name (nil: none, or too old) and
// the generation to hand to put with a lookup made now.
func (c *pidCache) get(name string) (*actor.PID, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[name]
	if ok && c.now().Sub(e.at) < c.ttl {
		return e.pid, c.gen
	}
	if ok {
		delete(c.m, name)
	}
	return nil, c.gen
}

// put keeps pid for name unless an eviction happened since get returned
// gen.
func (c *pidCache) put(name string, pid *actor.PID, gen uint64) {
	if pid == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	c.m[name] = cachedPID{pid: pid, at: c.now()}
}

// stopped drops name's entry if it is pid (a newer activation's stays).
func (c *pidCache) stopped(name string, pid *actor.PID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if e, ok := c.m[name]; ok && (pid == nil || e.pid.Equal(pid)) {
		delete(c.m, name)
	}
}

// clear drops every entry (the topology changed).
func (c *pidCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.m)
}

// len is the number of entries (tests).
func (c *pidCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
