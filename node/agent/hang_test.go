package agent

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/tether/tether/node/mount"
)

// hangs makes chosen mounter calls hang until the test releases them. A
// call is named by its operation and its target's base name (the volume):
// "stage:a", "unpublish:a", "inspect:a". Every gate is released in
// t.Cleanup, before the rig's own cleanup, so that no call outlives the
// test.
type hangs struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	entered map[string]int // calls made
	blocked map[string]int // calls waiting at their gate now
}

func newHangs(t *testing.T) *hangs {
	h := &hangs{gates: map[string]chan struct{}{}, entered: map[string]int{}, blocked: map[string]int{}}
	t.Cleanup(h.releaseAll)
	return h
}

// hang makes the calls named key wait until release (or the test's end).
func (h *hangs) hang(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gates[key] = make(chan struct{})
}

// release lets the calls named key through, now and from now on.
func (h *hangs) release(key string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if g, ok := h.gates[key]; ok {
		close(g)
		delete(h.gates, key)
	}
}

func (h *hangs) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for k, g := range h.gates {
		close(g)
		delete(h.gates, k)
	}
}

// calls reports how many calls named key were made, and how many of them
// are waiting at their gate now.
func (h *hangs) calls(key string) (entered, blocked int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.entered[key], h.blocked[key]
}

func (h *hangs) pass(op, target string) {
	key := op + ":" + filepath.Base(target)
	h.mu.Lock()
	h.entered[key]++
	g := h.gates[key]
	if g == nil {
		h.mu.Unlock()
		return
	}
	h.blocked[key]++
	h.mu.Unlock()
	<-g
	h.mu.Lock()
	h.blocked[key]--
	h.mu.Unlock()
}

// wrap is a startAgent wrapper: the agent's mounter passes h's gates.
func (h *hangs) wrap(m mount.Mounter) mount.Mounter { return hangMounter{Mounter: m, h: h} }

type hangMounter struct {
	mount.Mounter
	h *hangs
}

func (m hangMounter) Stage(source, target string) error {
	m.h.pass("stage", target)
	return m.Mounter.Stage(source, target)
}

func (m hangMounter) Unstage(target string) error {
	m.h.pass("unstage", target)
	return m.Mounter.Unstage(target)
}

func (m hangMounter) Publish(staged, target string, ro bool) error {
	m.h.pass("publish", target)
	return m.Mounter.Publish(staged, target, ro)
}

func (m hangMounter) Unpublish(target string) error {
	m.h.pass("unpublish", target)
	return m.Mounter.Unpublish(target)
}

func (m hangMounter) Inspect(target string) (mount.State, string, error) {
	m.h.pass("inspect", target)
	return m.Mounter.Inspect(target)
}
