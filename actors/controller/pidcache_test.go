package controller

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// TestPIDCache: what the cluster answered is kept until its activation
// stops, the topology changes or the TTL passes; an answer that an
// eviction raced is not kept.
func TestPIDCache(t *testing.T) {
	now := time.Unix(1000, 0)
	pid := func(id string) *actor.PID { return actor.NewPID("127.0.0.1:1", id) }
	type step struct {
		do   func(c *pidCache)
		name string
		want *actor.PID // what get(name) returns after do
	}
	var gen uint64
	steps := []struct {
		what string
		step
	}{
		{"empty", step{func(*pidCache) {}, "volume/v1", nil}},
		{"kept", step{func(c *pidCache) { _, g := c.get("volume/v1"); c.put("volume/v1", pid("a"), g) }, "volume/v1", pid("a")}},
		{"another stopped: kept", step{func(c *pidCache) { c.stopped("volume/v2", pid("b")) }, "volume/v1", pid("a")}},
		{"another activation of it stopped: kept", step{func(c *pidCache) { c.stopped("volume/v1", pid("old")) }, "volume/v1", pid("a")}},
		{"it stopped: dropped", step{func(c *pidCache) { c.stopped("volume/v1", pid("a")) }, "volume/v1", nil}},
		{"kept again", step{func(c *pidCache) { _, g := c.get("volume/v1"); c.put("volume/v1", pid("c"), g) }, "volume/v1", pid("c")}},
		{"topology: dropped", step{func(c *pidCache) { c.clear() }, "volume/v1", nil}},
		{"an eviction raced the lookup: not kept", step{func(c *pidCache) {
			_, gen = c.get("volume/v1")
			c.stopped("volume/v1", pid("c"))
			c.put("volume/v1", pid("c"), gen)
		}, "volume/v1", nil}},
		{"no answer: nothing kept", step{func(c *pidCache) { _, g := c.get("node/n1"); c.put("node/n1", nil, g) }, "node/n1", nil}},
		{"before the TTL: kept", step{func(c *pidCache) {
			_, g := c.get("node/n1")
			c.put("node/n1", pid("d"), g)
			now = now.Add(pidCacheTTL - time.Nanosecond)
		}, "node/n1", pid("d")}},
		{"at the TTL: dropped", step{func(*pidCache) { now = now.Add(time.Nanosecond) }, "node/n1", nil}},
	}
	c := newPIDCache(pidCacheTTL, func() time.Time { return now })
	for _, s := range steps {
		s.do(c)
		got, _ := c.get(s.name)
		if (got == nil) != (s.want == nil) || (got != nil && !got.Equal(s.want)) {
			t.Fatalf("%s: get(%s) = %v, want %v", s.what, s.name, got, s.want)
		}
	}
	if c.len() != 0 {
		t.Fatalf("%d entries left, want none (every one was dropped)", c.len())
	}
}
