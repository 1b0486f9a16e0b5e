package sim

import (
	"fmt"

	"github.com/tether/tether/cloud"
)

// Instance and attachment changes made from the cloud's side, as an
// operator in a cloud console or the cloud itself makes them. None is a
// provider call: they are not counted, throttled, delayed or subject to
// injected errors. With Config.StatePath set, a change that cannot be
// written fails and changes nothing.

// Replace gives node a new instance: the instance backing it is terminated
// (its attachments removed with ReasonTerminate) and deleted (calls naming
// it fail with cloud.ErrNotFound from now on), and a new running instance
// with a new ID and the default attach limit backs node. A node without an
// instance simply gets one. It returns the new instance's ID.
func (c *Cloud) Replace(node cloud.NodeName) (cloud.InstanceID, error) {
	c.mu.Lock()
	if old, ok := c.nodes[node]; ok {
		c.dropInstanceLocked(old, ReasonTerminate)
	}
	id := c.newInstanceLocked(node)
	if err := c.commitUnlock("replace the instance of node " + string(node)); err != nil {
		return "", err
	}
	return id, nil
}

// Delete deletes inst for good: its attachments are removed (ReasonDelete),
// calls naming it fail with cloud.ErrNotFound, and its node has no instance
// any more (InstanceID fails with cloud.ErrNotFound) until AddInstance or
// Replace gives it one. It fails with cloud.ErrNotFound if inst is unknown.
func (c *Cloud) Delete(inst cloud.InstanceID) error {
	c.mu.Lock()
	in, ok := c.insts[inst]
	if !ok {
		c.mu.Unlock()
		return fmt.Errorf("sim: delete %s: instance not found: %w", inst, cloud.ErrNotFound)
	}
	c.dropInstanceLocked(in, ReasonDelete)
	return c.commitUnlock("delete " + string(inst))
}

// ConsoleDetach detaches vol from inst from the cloud's side while the
// instance keeps running (an operator in the cloud console): the change is
// reported with ReasonConsole and not counted in DetachNew. Detaching what
// is not attached does nothing. It fails with cloud.ErrNotFound if vol or
// inst is unknown.
func (c *Cloud) ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error {
	c.mu.Lock()
	v, in, err := c.lookupLocked("console detach", vol, inst)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	if _, ok := in.devices[vol]; !ok {
		c.mu.Unlock()
		return nil
	}
	c.removeLocked(v, in, ReasonConsole)
	return c.commitUnlock(fmt.Sprintf("console detach %s from %s", vol, inst))
}

// commitUnlock ends a change made under the lock: it commits it (see
// commitLocked), releases the lock and, if it was written, delivers it to
// the observers. what names the change in the error.
func (c *Cloud) commitUnlock(what string) error {
	err := c.commitLocked()
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("sim: %s: %w", what, err)
	}
	c.deliver()
	return nil
}

// detachAllLocked removes every attachment of in, with reason.
func (c *Cloud) detachAllLocked(in *instance, reason string) {
	for _, vol := range sortedKeys(in.devices) {
		c.removeLocked(c.vols[vol], in, reason)
	}
}

// dropInstanceLocked removes in's attachments (with reason) and forgets
// in.
func (c *Cloud) dropInstanceLocked(in *instance, reason string) {
	c.detachAllLocked(in, reason)
	in.running = false
	c.touchInstLocked(in.id)
	delete(c.insts, in.id)
	if c.nodes[in.node] == in {
		delete(c.nodes, in.node)
	}
}

// newInstanceLocked creates a running instance backing node.
func (c *Cloud) newInstanceLocked(node cloud.NodeName) cloud.InstanceID {
	c.seq++
	in := &instance{
		id:      cloud.InstanceID(fmt.Sprintf("i-%s-%d", node, c.seq)),
		node:    node,
		running: true,
		limit:   c.defLimit,
		devices: make(map[cloud.VolumeID]string),
	}
	c.nodes[node] = in
	c.insts[in.id] = in
	c.touchInstLocked(in.id)
	return in.id
}
