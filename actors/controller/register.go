package controller

// registerFailed: a registration failed; the next heartbeat tries again.
type registerFailed struct{}

// register makes sure the desired state has this node, once per
// incarnation, when its agent announces itself (Config.RegisterNode): an
// agent registers its node as the kubelet does, and a Node document stays
// possible to declare one beforehand. It reads the store and registers
// off the actor; a failure is logged and tried again at the next
// heartbeat. A node deleted while its agent still runs comes back at the
// agent's next announcement to a new incarnation, as in Kubernetes.
func (a *nodeActor) register(node string) {
	reg := a.env.cfg.RegisterNode
	if reg == nil || a.registering || node != string(a.name) {
		return
	}
	a.registering = true
	e, name, self := a.env, a.name, a.self
	go func() {
		_, known, err := e.store.Node(name)
		if err == nil && !known {
			if err = reg(name); err == nil {
				e.log.WithField("node", name).Info("registered the node its agent announced")
			}
		}
		if err != nil {
			e.log.WithField("node", name).Warnf("registering the node its agent announced: %v (tried again at its next heartbeat)", err)
			if e.ctx.Err() == nil {
				e.guard.Send(self, registerFailed{})
			}
		}
	}()
}
