package simulation

import "github.com/tether/tether/cloud"

// The controller's node -> instance resolution (actors/controller/
// instances.go), as the shells use it: one cache per controller process,
// shared by its actors, filled by an InstanceID call on a miss, an entry
// forgotten when a call naming its instance fails NotFound, and dropped by
// the sync when InstanceVolumes omits the instance (deleted, or its node
// replaced). It is lost with the controller process (restartController).
// The ground truth (checkers, disks, convergence) uses w.instance instead:
// the instance backing the node now.

// resolve is instances.resolve: the cached instance of n, or the cloud's
// answer (cloud.ErrNotFound when no instance backs n), cached.
func (w *world) resolve(n cloud.NodeName) (cloud.InstanceID, error) {
	if id, ok := w.instCache[n]; ok {
		return id, nil
	}
	id, err := w.cloud.InstanceID(bg, n)
	if err != nil {
		return "", err
	}
	w.instCache[n] = id
	return id, nil
}

// dropInstance is instances.drop: forget n's entry if it still names inst.
func (w *world) dropInstance(n cloud.NodeName, inst cloud.InstanceID) {
	if w.instCache[n] == inst {
		delete(w.instCache, n)
	}
}

// forgetInstance is instances.forget: forget n's entry after a call that
// failed NotFound.
func (w *world) forgetInstance(n cloud.NodeName, err error) {
	if cloud.Classify(err) == cloud.KindNotFound {
		delete(w.instCache, n)
	}
}
