package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/cloud"
)

// instances caches the explicit NodeName -> InstanceID resolution. A node
// keeps its instance across stop/start; when the cloud no longer knows an
// instance, the entry is dropped and resolved again.
// Concurrent misses for one node make one cloud call (a new node with many
// volumes must not cost one InstanceID call per volume).
type instances struct {
	cloud cloud.Provider
	mu    sync.Mutex
	m     map[cloud.NodeName]cloud.InstanceID
	locks map[cloud.NodeName]*sync.Mutex
	// noBatch: the cloud said it cannot resolve in batches.
	noBatch atomic.Bool
}

func newInstances(p cloud.Provider) *instances {
	return &instances{cloud: p, m: map[cloud.NodeName]cloud.InstanceID{}, locks: map[cloud.NodeName]*sync.Mutex{}}
}

func (c *instances) resolve(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	id, _, err := c.resolveCached(ctx, node)
	return id, err
}

// resolveCached is resolve, saying whether the answer came from the cache.
func (c *instances) resolveCached(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, bool, error) {
	c.mu.Lock()
	id, ok := c.m[node]
	l := c.locks[node]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[node] = l
	}
	c.mu.Unlock()
	if ok {
		return id, true, nil
	}
	l.Lock()
	defer l.Unlock()
	c.mu.Lock()
	id, ok = c.m[node]
	c.mu.Unlock()
	if ok {
		return id, false, nil // another caller asked the cloud just now
	}
	id, err := c.cloud.InstanceID(ctx, node)
	if err != nil {
		return "", false, err
	}
	c.mu.Lock()
	c.m[node] = id
	c.mu.Unlock()
	return id, false, nil
}

// drop forgets node's entry if it still names inst (a gone instance).
func (c *instances) drop(node cloud.NodeName, inst cloud.InstanceID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[node] == inst {
		delete(c.m, node)
	}
}

// forget drops node's entry after the cloud said the instance is unknown.
func (c *instances) forget(node cloud.NodeName, err error) {
	if cloud.Classify(err) != cloud.KindNotFound {
		return
	}
	c.mu.Lock()
	delete(c.m, node)
	c.mu.Unlock()
}

// resolveConcurrency bounds the InstanceID calls one resolveAll makes at
// once: a batch of 50 new nodes behind a 50 ms cloud is 2.5 s one after
// another.
const resolveConcurrency = 16

// resolved is resolveAll's answer for one node.
type resolved struct {
	inst cloud.InstanceID
	err  error // cloud.KindNotFound: no instance backs the node
	// cached: inst is from the cache, not from the cloud in this call. It
	// may be stale: the node's machine may have been replaced since, and
	// another member (or this one's attach) may already use the new one.
	cached bool
}

// resolveFresh is resolveAll, or, if fresh, resolveAll asking the cloud
// whatever the cache holds.
//
// A truth query that named a cached instance and heard "gone" or "not
// attached" may have asked about the node's previous machine: after a
// replace-instance, the node is backed by a new instance, and in a
// cluster every member keeps a cache of its own, so another member may
// have attached a volume to the new instance while this one still names
// the old. "Nothing attached to that instance" is then not "nothing
// attached to the node"; reported as the node's truth it made a volume
// actor believe its attachment lost and attach elsewhere while the volume
// was still attached (I1, found by chaos --distributed). Such nodes are
// resolved afresh and asked again.
func (c *instances) resolveFresh(ctx context.Context, nodes []cloud.NodeName, fresh bool) map[cloud.NodeName]resolved {
	if out, ok := c.resolveBatched(ctx, nodes, fresh); ok {
		return out
	}
	out := make(map[cloud.NodeName]resolved, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, resolveConcurrency)
	for _, n := range nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var r resolved
			if fresh {
				r.inst, r.err = c.fetch(ctx, n)
			} else {
				r.inst, r.cached, r.err = c.resolveCached(ctx, n)
			}
			mu.Lock()
			out[n] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// fetch asks the cloud for node's instance, whatever the cache holds, and
// keeps the answer (the cache keeps what it had until then: others go on
// using it meanwhile instead of asking too).
func (c *instances) fetch(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	id, err := c.cloud.InstanceID(ctx, node)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil:
		c.m[node] = id
	case cloud.Classify(err) == cloud.KindNotFound:
		delete(c.m, node)
	}
	return id, err
}

// resolveAll resolves nodes: cached ones at once, the others in ONE call
// per batch where the cloud resolves in batches (cloud.InstanceResolver),
// else concurrently, one call per node.
func (c *instances) resolveAll(ctx context.Context, nodes []cloud.NodeName) map[cloud.NodeName]resolved {
	return c.resolveFresh(ctx, nodes, false)
}

// resolveBatched is resolveFresh through cloud.InstanceResolver; false if
// the cloud has none (then it never asks again).
func (c *instances) resolveBatched(ctx context.Context, nodes []cloud.NodeName, fresh bool) (map[cloud.NodeName]resolved, bool) {
	r, ok := c.cloud.(cloud.InstanceResolver)
	if !ok || c.noBatch.Load() {
		return nil, false
	}
	out := make(map[cloud.NodeName]resolved, len(nodes))
	var miss []cloud.NodeName
	c.mu.Lock()
	for _, n := range nodes {
		if id, ok := c.m[n]; ok && !fresh {
			out[n] = resolved{inst: id, cached: true}
		} else {
			miss = append(miss, n)
		}
	}
	c.mu.Unlock()
	batch := max(1, c.cloud.BatchSize())
	for i := 0; i < len(miss); i += batch {
		part := miss[i:min(len(miss), i+batch)]
		got, err := r.InstanceIDs(ctx, part)
		if errors.Is(err, errors.ErrUnsupported) {
			c.noBatch.Store(true)
			return nil, false
		}
		c.mu.Lock()
		for _, n := range part {
			switch id, ok := got[n]; {
			case err != nil:
				out[n] = resolved{err: err}
			case !ok:
				delete(c.m, n)
				out[n] = resolved{err: fmt.Errorf("instance_ids: no instance backs node %s: %w", n, cloud.ErrNotFound)}
			default:
				c.m[n] = id
				out[n] = resolved{inst: id}
			}
		}
		c.mu.Unlock()
	}
	return out, true
}
