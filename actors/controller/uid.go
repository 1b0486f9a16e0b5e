package controller

// refreshUID reads the ObjectUID of the node this actor serves. A node
// actor outlives deletes: after one it keeps the deleted node's UID (its
// late events belong to that node, and are not kept: see
// events.Recorder.Forget), and the name's next incarnation is served by the
// same actor, which takes the new UID at the Wake that ApplyAll sends it
// after the put.
func (a *nodeActor) refreshUID() {
	spec, ok, err := a.env.store.Node(a.name)
	if err != nil {
		a.env.log.WithField("node", a.name).Warnf("reading the node's UID: %v (keeping %q)", err, a.ref.UID)
		return
	}
	if ok {
		a.ref.UID = spec.ObjectUID
	}
}
