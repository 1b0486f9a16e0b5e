package process

// The loop account's provider calls, counted, and its observers: the
// changes of attachments made through it, told as the sim's ObserveSync
// tells its own (the demo's invariant checker hears them). And the
// release of a throw-away loop cloud.

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/loop"
	"github.com/tether/tether/cloud/sim"
)

// CallCounts implements Account.
func (a *loopAccount) CallCounts() CallCounts {
	return CallCounts{Attach: int(a.attach.Load()), Detach: int(a.detach.Load()), Verify: int(a.verify.Load())}
}

// Attach implements cloud.Provider (counted, observed).
func (a *loopAccount) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	a.attach.Add(1)
	var dev string
	err := a.changed(sim.ReasonAttach, func() error {
		var err error
		dev, err = a.Cloud.Attach(ctx, vol, inst)
		return err
	})
	return dev, err
}

// Detach implements cloud.Provider (counted, observed).
func (a *loopAccount) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	a.detach.Add(1)
	return a.changed(sim.ReasonDetach, func() error { return a.Cloud.Detach(ctx, vol, inst) })
}

// VolumesAreAttached implements cloud.Provider (counted).
func (a *loopAccount) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	a.verify.Add(1)
	return a.Cloud.VolumesAreAttached(ctx, q)
}

// InstanceVolumes implements cloud.Provider (counted).
func (a *loopAccount) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	a.verify.Add(1)
	return a.Cloud.InstanceVolumes(ctx, insts)
}

// Terminate implements cloud.Provisioner (observed).
func (a *loopAccount) Terminate(inst cloud.InstanceID) error {
	return a.changed(sim.ReasonTerminate, func() error { return a.Cloud.Terminate(inst) })
}

// Delete implements cloud.Provisioner (observed).
func (a *loopAccount) Delete(inst cloud.InstanceID) error {
	return a.changed(sim.ReasonDelete, func() error { return a.Cloud.Delete(inst) })
}

// Replace gives node a new instance, the old one deleted (observed: its
// attachments removed as the sim's Replace reports them, ReasonTerminate).
func (a *loopAccount) Replace(node cloud.NodeName) (cloud.InstanceID, error) {
	var id cloud.InstanceID
	err := a.changed(sim.ReasonTerminate, func() error {
		var err error
		id, err = a.Cloud.Replace(node)
		return err
	})
	return id, err
}

// ConsoleDetach detaches vol from inst from the cloud's side (observed,
// ReasonConsole).
func (a *loopAccount) ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error {
	return a.changed(sim.ReasonConsole, func() error { return a.Cloud.ConsoleDetach(vol, inst) })
}

// ObserveSync registers f, called with every attachment change made
// through the account (tether's attaches and detaches, terminations,
// replacements and deletions of instances, console detaches), in order, synchronously, right after the
// change and before the call that made it returns, while no other change
// can be made through the account: a timeline as the sim's ObserveSync
// gives (with the sim's Reasons). f must be quick and
// must not call the account.
func (a *loopAccount) ObserveSync(f func(sim.Change)) {
	a.changes.Lock()
	defer a.changes.Unlock()
	var next []func(sim.Change)
	if cur := a.observers.Load(); cur != nil {
		next = slices.Clone(*cur)
	}
	next = append(next, f)
	a.observers.Store(&next)
}

// changed runs the change f and tells the observers what it changed,
// read from the cloud's inventory before and after (whether f failed or
// not: a failed call may have had an effect). removed is the Reason of
// the attachments it removed.
func (a *loopAccount) changed(removed string, f func() error) error {
	if a.observers.Load() == nil {
		return f()
	}
	a.changes.Lock()
	defer a.changes.Unlock()
	before := a.Cloud.Inventory()
	err := f()
	after := a.Cloud.Inventory()
	now := time.Now()
	for _, ch := range attachmentChanges(before, after, removed) {
		ch.Time = now
		for _, o := range *a.observers.Load() {
			o(ch)
		}
	}
	return err
}

// attachmentChanges lists what differs between two inventories of the
// loop cloud: removals (with the Reason removed), then additions.
func attachmentChanges(before, after loop.Inventory, removed string) []sim.Change {
	type att struct {
		vol  cloud.VolumeID
		inst cloud.InstanceID
	}
	nodes := map[cloud.InstanceID]cloud.NodeName{}
	index := func(inv loop.Inventory) (map[att]cloud.AccessMode, []att) {
		for _, in := range inv.Instances {
			nodes[in.ID] = in.Node
		}
		set := map[att]cloud.AccessMode{}
		var order []att
		for _, v := range inv.Volumes {
			for _, inst := range v.Attached {
				set[att{v.ID, inst}] = v.Mode
				order = append(order, att{v.ID, inst})
			}
		}
		return set, order
	}
	was, wasOrder := index(before)
	is, isOrder := index(after)
	var out []sim.Change
	for _, x := range wasOrder {
		if _, ok := is[x]; !ok {
			out = append(out, sim.Change{Volume: x.vol, Instance: x.inst, Node: nodes[x.inst], Mode: was[x], Reason: removed})
		}
	}
	for _, x := range isOrder {
		if _, ok := was[x]; !ok {
			out = append(out, sim.Change{Volume: x.vol, Instance: x.inst, Node: nodes[x.inst], Mode: is[x], Attached: true, Reason: sim.ReasonAttach})
		}
	}
	return out
}

// ReleaseLoop detaches every volume of the loop cloud under dataDir and
// releases every loop device bound to one of its images (loop's
// ReleaseAll), for a throw-away data directory (tether demo, tests), once
// the tether that used it has stopped and its mounts are gone (a device
// still mounted is released when it is unmounted). A data directory
// without a loop cloud is left alone.
func ReleaseLoop(dataDir string) error {
	dir := filepath.Join(dataDir, LoopDir)
	if _, err := os.Lstat(filepath.Join(dir, "state.json")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	c, err := loop.Open(loop.Config{Dir: dir})
	if err != nil {
		return fmt.Errorf("loop cloud: %w", err)
	}
	return errors.Join(c.ReleaseAll(), c.Close())
}
