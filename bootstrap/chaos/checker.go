// Package chaos runs tether under faults and proves it keeps its promises.
// Checker watches ground truth — the sim cloud's real attachments, the
// mounts on the agents' disks, the persisted node statuses — never
// tether's own beliefs. Run drives an embedded tether through a seeded
// fault plan (actor kills, agent restarts, instance terminations, cloud
// errors, latency and throttling, controller restarts) while workloads
// churn, then stops the faults and waits for convergence.
package chaos

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/layout"
	"github.com/tether/tether/node/mount"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string // I1 .. I5
	Volume    cloud.VolumeID
	Node      cloud.NodeName
	Time      time.Time
	Detail    string
	History   []string // what happened to the volume, oldest first
}

func (v Violation) String() string {
	return fmt.Sprintf("%s volume=%s node=%s at %s: %s", v.Invariant, v.Volume, v.Node, v.Time.Format(time.RFC3339Nano), v.Detail)
}

type volNode struct {
	vol  cloud.VolumeID
	node cloud.NodeName
}

// Checker checks I1-I4 as changes happen and I5 on demand.
type Checker struct {
	Cloud   *sim.Cloud
	Store   func() store.Store // the current store (a restarted controller may bring a new one)
	NodeDir func(cloud.NodeName) string
	Mounter func(cloud.NodeName) mount.Mounter
	Now     func() time.Time

	mu         sync.Mutex
	violations []Violation
	forced     map[volNode]bool
	forceCount int
	history    map[cloud.VolumeID][]string
	terminated map[cloud.NodeName]time.Time
}

func (c *Checker) note(vol cloud.VolumeID, format string, args ...any) {
	if c.history == nil {
		c.history = map[cloud.VolumeID][]string{}
	}
	h := append(c.history[vol], c.Now().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
	if len(h) > 200 {
		h = h[len(h)-200:]
	}
	c.history[vol] = h
}

func (c *Checker) violate(inv string, vol cloud.VolumeID, n cloud.NodeName, format string, args ...any) {
	c.violations = append(c.violations, Violation{Invariant: inv, Volume: vol, Node: n, Time: c.Now(),
		Detail: fmt.Sprintf(format, args...), History: slices.Clone(c.history[vol])})
}

// OnEvent records permitted force detaches and keeps each volume's history.
func (c *Checker) OnEvent(e events.Event) {
	if e.Object.Kind != events.KindVolume {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	vol := cloud.VolumeID(e.Object.Name)
	c.note(vol, "%s %s", e.Type, e.Node)
	if e.Type == "ForceDetach" {
		if c.forced == nil {
			c.forced = map[volNode]bool{}
		}
		c.forced[volNode{vol, cloud.NodeName(e.Node)}] = true
	}
}

// OnChange checks the cloud's ground truth at every attachment change.
func (c *Checker) OnChange(ch sim.Change) {
	mounted := ""
	if !ch.Attached && ch.Reason == "detach" {
		mounted = c.mountedOn(ch.Node, ch.Volume)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.note(ch.Volume, "cloud %s attached=%v on %s (%s)", ch.Reason, ch.Attached, ch.Node, ch.Instance)
	if ch.Attached {
		c.checkI1(ch)
		return
	}
	if ch.Reason != "detach" {
		// A terminated instance loses its volumes: not tether's doing.
		if c.terminated == nil {
			c.terminated = map[cloud.NodeName]time.Time{}
		}
		c.terminated[ch.Node] = c.Now()
		return
	}
	key := volNode{ch.Volume, ch.Node}
	if mounted != "" {
		if c.forced[key] {
			c.forceCount++
		} else {
			c.violate("I2", ch.Volume, ch.Node, "detached while mounted at %s", mounted)
		}
	}
	delete(c.forced, key)
	c.checkI4(ch)
}

func (c *Checker) checkI1(ch sim.Change) {
	st := c.Store()
	spec, ok, err := st.Volume(ch.Volume)
	if err != nil || !ok || spec.Mode != cloud.Exclusive {
		return
	}
	if on := c.Cloud.Attachments()[ch.Volume]; len(on) > 1 {
		c.violate("I1", ch.Volume, ch.Node, "exclusive volume attached to %v", on)
	}
}

// checkI4: a detach by tether happens only after the node status stopped
// listing the volume (a re-attach racing with this check is excused by
// the cloud showing the volume attached there again).
func (c *Checker) checkI4(ch sim.Change) {
	st, ok, err := c.Store().NodeStatus(ch.Node)
	if err != nil || !ok {
		return
	}
	if _, listed := st.VolumesAttached[ch.Volume]; listed && !slices.Contains(c.Cloud.Attachments()[ch.Volume], ch.Instance) {
		c.violate("I4", ch.Volume, ch.Node, "detached while the persisted node status still lists it in VolumesAttached")
	}
}

// mountedOn returns a path where vol is mounted on node n, or "".
func (c *Checker) mountedOn(n cloud.NodeName, vol cloud.VolumeID) string {
	l, err := layout.New(c.NodeDir(n))
	if err != nil {
		return ""
	}
	found, err := mount.Scan(l, c.Mounter(n))
	if err != nil {
		return ""
	}
	for _, e := range found.Entries {
		if e.Volume == string(vol) && e.State == mount.Mounted {
			return e.Path
		}
	}
	return ""
}

// Violations returns what was found so far.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// ForcedDetaches counts permitted detaches of mounted volumes.
func (c *Checker) ForcedDetaches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.forceCount
}

// Note adds a line to a volume's history (the runner tells what it does).
func (c *Checker) Note(vol cloud.VolumeID, format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.note(vol, format, args...)
}
