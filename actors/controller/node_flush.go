package controller

import (
	"errors"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// Group commit of a node's status. A Persist does not write at once: it
// marks the status dirty and queues a flushStatus behind the messages
// already in the actor's mailbox. Those are handled first (their changes
// join the same write), and every effect from the Persist on waits, in
// order, until the flush writes the status once. So the changes of a burst
// (a teardown: every volume's "not in use", prepare and detach) cost one
// write instead of one each, and nobody hears of a change before it is
// durable, as before: a held effect runs only after the write that carries
// its change, and effects keep the order in which the core made them.
//
// A panic outside a step or a flush (a crash asked for) and a stop between
// messages write the burst first: its answers are not lost with the actor.
// A panic in the middle of a step drops it, as a process death would.
//
// A failed write rolls the whole burst back (nodestatus.PersistFailed),
// drops the held effects that depended on a Persist (those after a Persist
// in their event's effects), runs the others in order, then what the core
// returned for the failure (it refuses every prepare of the burst). A fenced write stops
// the actor and tells nobody.

// flushStatus is the node actor's note to itself: write the dirty status.
// It never leaves the actor.
type flushStatus struct{}

// held is an effect waiting for the flush: a core effect, or a shell
// action (push the status, answer a query).
type held struct {
	eff       nodestatus.Effect
	do        func()
	push      bool // do is pushStatus: once per write is enough
	dependent bool // came after a Persist: dropped if the write fails
}

// runAll carries out effects in order; from a Persist on (and while a
// write is pending) they wait for the flush.
func (a *NodeRunner) runAll(effs []nodestatus.Effect) {
	if !a.dirty {
		a.prefetch(effs)
	}
	dependent := false
	for _, eff := range effs {
		if _, ok := eff.(nodestatus.Persist); ok {
			if !a.dirty {
				a.dirty = true
				a.host.QueueFlush()
			}
			dependent = true
			continue
		}
		if a.dirty && !a.breakEarly {
			a.held = append(a.held, held{eff: eff, dependent: dependent})
			continue
		}
		a.runEffect(eff)
	}
}

// later runs do now, or after the pending write, in order with the held
// effects.
func (a *NodeRunner) later(h held) {
	if a.dirty {
		a.held = append(a.held, h)
		return
	}
	h.do()
}

// Flush writes the dirty status, then runs what waited for it. The host
// calls it for the flush QueueFlush asked for (and may call it at any
// time between messages: a stop writes the burst first).
func (a *NodeRunner) Flush() {
	if !a.dirty {
		return
	}
	waiting := a.held
	a.dirty, a.held = false, nil
	a.busy = true
	defer func() { a.busy = false }()
	// The status as it is, not a copy: a store keeps none of what it is
	// given (it encodes it, or copies it), and nothing changes it during
	// the write.
	err := a.host.PutStatus(a.core.View(), a.epoch)
	if errors.Is(err, store.ErrFenced) {
		// A newer incarnation owns the node: stop, tell nobody.
		a.host.Fenced(err)
		return
	}
	if err != nil {
		a.host.Record("FailedPersistStatus", true, err.Error())
		// Roll back first: what runs now (a query's answer) sees the
		// status as written.
		failed := a.core.Step(a.host.Now(), nodestatus.PersistFailed{Msg: err.Error()})
		a.prefetchHeld(waiting)
		push := false
		for _, h := range waiting {
			switch {
			case h.dependent:
			case h.push:
				push = true
			case h.do != nil:
				h.do()
			default:
				a.runEffect(h.eff)
			}
		}
		a.runAll(failed)
		if push {
			a.later(held{do: a.pushStatus, push: true})
		}
		return
	}
	a.core.Step(a.host.Now(), nodestatus.Persisted{})
	a.prefetchHeld(waiting)
	a.pushStatus()
	for _, h := range waiting {
		switch {
		case h.push: // pushed above, with the status just written
		case h.do != nil:
			h.do()
		default:
			a.runEffect(h.eff)
		}
	}
}

// prefetch resolves at once the volume actors effs are about to tell
// (localLookup.prefetch), so that telling them one after the other does not
// wait for each owner in turn.
func (a *NodeRunner) prefetch(effs []nodestatus.Effect) {
	var vols []cloud.VolumeID
	for _, eff := range effs {
		if v := toldVolume(eff); v != "" {
			vols = append(vols, v)
		}
	}
	if len(vols) > 0 {
		a.host.Prefetch(vols)
	}
}

// prefetchHeld is prefetch of the held core effects.
func (a *NodeRunner) prefetchHeld(hs []held) {
	effs := make([]nodestatus.Effect, 0, len(hs))
	for _, h := range hs {
		if h.eff != nil {
			effs = append(effs, h.eff)
		}
	}
	a.prefetch(effs)
}

// toldVolume is the volume whose actor eff sends to ("": none).
func toldVolume(eff nodestatus.Effect) cloud.VolumeID {
	switch f := eff.(type) {
	case nodestatus.PrepareAnswer:
		return f.Volume
	case nodestatus.NotifyVolume:
		return f.Volume
	case nodestatus.AttachRecorded:
		return f.Volume
	case nodestatus.AttachNotRecorded:
		return f.Volume
	}
	return ""
}
