package controller

import (
	"slices"
	"sync"

	"github.com/tether/tether/cloud"
)

// Changed tells the actors of vols that mine selects their desired state
// from the store again. In a cluster each member calls it with what its
// store's watch saw change (store.Etcd.OnDesiredChange) and the
// identities it owns: the tells that follow an apply go from the member
// that committed it, and are lost if it cannot reach the actors' owners
// (cut off from its peers but not from etcd, or dying before it sent
// them); every owner hears of the change from etcd all the same. It never
// blocks: calls while a pass runs coalesce into the next one.
func (c *Controller) Changed(vols []cloud.VolumeID, mine func(kind, identity string) bool) {
	e := c.env
	if e.ctx.Err() != nil || len(vols) == 0 {
		return
	}
	ch := &e.changed
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.pending == nil {
		ch.pending = map[cloud.VolumeID]bool{}
	}
	for _, v := range vols {
		ch.pending[v] = true
	}
	ch.mine = mine
	if ch.running {
		return
	}
	ch.running = true
	go func() {
		for {
			ch.mu.Lock()
			pending, mine := ch.pending, ch.mine
			ch.pending = nil
			if len(pending) == 0 || e.ctx.Err() != nil {
				ch.running = false
				ch.mu.Unlock()
				return
			}
			ch.mu.Unlock()
			var ids []cloud.VolumeID
			for v := range pending {
				if mine == nil || mine(KindVolume, string(v)) {
					ids = append(ids, v)
				}
			}
			slices.Sort(ids)
			if err := c.sendDesired(ids...); err != nil && e.ctx.Err() == nil {
				e.log.Warnf("telling the actors of a change seen in the store (a resync tells them again): %v", err)
				c.Resync()
			}
		}
	}()
}

// DesiredFromStore says that from now on every change of the desired
// state reaches the volume actors through Changed (the store's watch, on
// every member): the tells a change's own apply sent besides were the
// same messages again, each resolved through the cluster from the member
// that applied it. Node actors and agents are still told by the apply.
func (c *Controller) DesiredFromStore() { c.env.desiredFromStore.Store(true) }

// changedState coalesces Changed calls.
type changedState struct {
	mu      sync.Mutex
	running bool
	pending map[cloud.VolumeID]bool
	mine    func(kind, identity string) bool
}
