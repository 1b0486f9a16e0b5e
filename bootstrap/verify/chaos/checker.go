package chaos

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// Violation is one broken invariant.
type Violation struct {
	Invariant string         `json:"invariant"` // I1 .. I5
	Volume    cloud.VolumeID `json:"volume"`
	Node      cloud.NodeName `json:"node"`
	Time      time.Time      `json:"time"`
	Detail    string         `json:"detail"`
	// History is what happened to the volume up to the violation, oldest
	// first, each line "time #stamp what".
	History []string `json:"history"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s volume=%s node=%s at %s: %s", v.Invariant, v.Volume, v.Node, v.Time.Format(time.RFC3339Nano), v.Detail)
}

// judgeEvery: the recording path judges pending records in batches of this
// many, so the timeline's memory stays bounded during long runs.
const judgeEvery = 512

// Checker keeps the timeline and judges I1-I4 on it. Wire it with
// Wire (process.Config: mounts, devices, store, and what each agent
// receives and acts on: WireAgents) and Watch; the zero value is
// ready to use. It is safe for concurrent use; its lock is a leaf (nothing
// is called while it is held), so the cloud may record under its own lock.
type Checker struct {
	mu      sync.Mutex
	seq     uint64
	pending []record // stamped, not yet judged, in stamp order
	j       judge
	store   storeFaults
	images  func(cloud.VolumeID) (string, error) // CheckImages; nil: no check
}

// Watch subscribes the checker to e's cloud, whichever it is (every
// attachment change: the sim's at the change, under its lock; the loop
// cloud's right after it, before the call that made it returns, see
// process.Embedded.ObserveSync) and to e's events (ForceDetach permits,
// and history). On the loop cloud it checks the disk each mount shows
// too (CheckImages). Call it before any volume exists.
func (c *Checker) Watch(e *process.Embedded) {
	e.ObserveSync(c.onChange)
	e.Events.Subscribe(c.onEvent)
	if im, ok := e.Account.(imager); ok {
		c.CheckImages(im.ImagePath)
	}
}

// add stamps r and appends it to the timeline: the stamp order is the
// order in which the recording points were passed.
func (c *Checker) add(r record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.time = time.Now()
	c.appendLocked(r)
}

// addStamped appends r, which carries the time it was recorded at, to the
// timeline: records made in other processes are merged by time first
// (RunDistributed), then added in that order.
func (c *Checker) addStamped(r record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.appendLocked(r)
}

func (c *Checker) appendLocked(r record) {
	c.seq++
	r.seq = c.seq
	c.pending = append(c.pending, r)
	if len(c.pending) >= judgeEvery {
		c.judgeLocked()
	}
}

func (c *Checker) judgeLocked() {
	for _, r := range c.pending {
		c.j.step(r)
	}
	clear(c.pending)
	c.pending = c.pending[:0]
}

// onChange records a real attachment change; the cloud calls it under its
// lock at the change (ObserveSync).
func (c *Checker) onChange(ch sim.Change) {
	c.add(record{kind: recCloud, vol: ch.Volume, node: ch.Node, change: ch})
}

// onEvent records ForceDetach permits and volume events for the histories.
func (c *Checker) onEvent(e events.Event) {
	if e.Object.Kind != events.KindVolume {
		return
	}
	k := recNote
	if e.Type == "ForceDetach" {
		k = recForce
	}
	c.add(record{kind: k, vol: cloud.VolumeID(e.Object.Name), node: cloud.NodeName(e.Node), text: "event " + e.Type + " " + e.Node})
}

// Note adds a line to a volume's history (the runner tells what it does).
func (c *Checker) Note(vol cloud.VolumeID, format string, args ...any) {
	c.add(record{kind: recNote, vol: vol, text: fmt.Sprintf(format, args...)})
}

// NodeDown records that node n went down: its agent stopped and every
// mount it had vanished. Call it after the mounts are gone.
func (c *Checker) NodeDown(n cloud.NodeName, why string) {
	c.add(record{kind: recNodeDown, node: n, text: why})
}

// Violations judges everything recorded so far and returns what broke.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return append([]Violation{}, c.j.violations...)
}

// ForcedDetaches counts permitted detaches of mounted volumes.
func (c *Checker) ForcedDetaches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return c.j.forceCount
}

// MountCalls counts the stages and publishes started so far.
func (c *Checker) MountCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return c.j.mountCalls
}

// DecisionsChecked counts the stages and publishes judged against the
// node status their agent had received when it started them.
func (c *Checker) DecisionsChecked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return c.j.decisions
}

// DisksChecked counts the mounts whose disk CheckImages checked.
func (c *Checker) DisksChecked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return c.j.diskChecks
}

// History returns a volume's recent history, oldest first.
func (c *Checker) History(vol cloud.VolumeID) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.judgeLocked()
	return slices.Clone(c.j.history[vol])
}
