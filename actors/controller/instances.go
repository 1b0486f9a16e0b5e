package controller

import (
	"context"
	"sync"

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
}

func newInstances(p cloud.Provider) *instances {
	return &instances{cloud: p, m: map[cloud.NodeName]cloud.InstanceID{}, locks: map[cloud.NodeName]*sync.Mutex{}}
}

func (c *instances) resolve(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	c.mu.Lock()
	id, ok := c.m[node]
	l := c.locks[node]
	if l == nil {
		l = &sync.Mutex{}
		c.locks[node] = l
	}
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	l.Lock()
	defer l.Unlock()
	c.mu.Lock()
	id, ok = c.m[node]
	c.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := c.cloud.InstanceID(ctx, node)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.m[node] = id
	c.mu.Unlock()
	return id, nil
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
}

// resolveAll resolves nodes concurrently (cached ones at once).
func (c *instances) resolveAll(ctx context.Context, nodes []cloud.NodeName) map[cloud.NodeName]resolved {
	out := make(map[cloud.NodeName]resolved, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, resolveConcurrency)
	for _, n := range nodes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			inst, err := c.resolve(ctx, n)
			mu.Lock()
			out[n] = resolved{inst, err}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}
