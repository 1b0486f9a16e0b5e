package loop

// Instances from the cloud's side, as an operator or the cloud itself
// changes them; the sim's admin methods, with the same meaning. None is a
// provider call: no context, no deadline. Each change is written to the
// state file before it returns; one that cannot be written fails and
// changes nothing. Attachments an instance loses are removed from the
// state first, then their devices released.

import (
	"errors"
	"fmt"

	"github.com/tether/tether/cloud"
)

// errUnchanged, from a change's function, means there is nothing to
// write: the change succeeds without a write.
var errUnchanged = errors.New("unchanged")

// AddInstance is AddInstanceChecked without the error: "" if it failed.
func (c *Cloud) AddInstance(node cloud.NodeName) cloud.InstanceID {
	id, _ := c.AddInstanceChecked(node)
	return id
}

// AddInstanceChecked creates a running instance backing node, with the
// default attach limit, and returns its ID ("i-<node>-<counter>"). If an
// instance backs node already (running or not) it returns that one. A node
// name that is not a valid name (names.ValidName) is refused.
func (c *Cloud) AddInstanceChecked(node cloud.NodeName) (cloud.InstanceID, error) {
	if err := validNode(node); err != nil {
		return "", badName("add instance", err)
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return "", err
	}
	w := c.cur.Load()
	if id, ok := w.nodes[node]; ok {
		return id, nil
	}
	next := w.clone()
	id := next.addInstance(node, c.defLimit)
	if err := c.commit(next); err != nil {
		return "", fmt.Errorf("loop: add instance for node %s: %w", node, err)
	}
	return id, nil
}

// InstanceOf returns the instance backing node, running or not.
func (c *Cloud) InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool) {
	w, err := c.view()
	if err != nil {
		return "", false
	}
	id, ok := w.nodes[node]
	return id, ok
}

// Running reports whether inst exists and is running.
func (c *Cloud) Running(inst cloud.InstanceID) bool {
	w, err := c.view()
	if err != nil {
		return false
	}
	return w.Instances[inst].Running
}

// Terminate stops inst and detaches every volume it has, releasing their
// devices. It keeps its ID and still backs its node until Start.
// Terminating a stopped instance does nothing; an unknown one fails with
// cloud.ErrNotFound.
func (c *Cloud) Terminate(inst cloud.InstanceID) error {
	if err := validInstance(inst); err != nil {
		return badName("terminate", err)
	}
	return c.change("terminate "+string(inst), func(w *world) (map[cloud.VolumeID]attachment, error) {
		in, ok := w.Instances[inst]
		switch {
		case !ok:
			return nil, fmt.Errorf("instance %s not found: %w", inst, cloud.ErrNotFound)
		case !in.Running:
			return nil, errUnchanged
		}
		in.Running = false
		w.Instances[inst] = in
		return w.detachInstance(inst), nil
	})
}

// Start makes a stopped instance run again, with the same ID and no
// volumes. Starting a running instance does nothing; an unknown one fails
// with cloud.ErrNotFound.
func (c *Cloud) Start(inst cloud.InstanceID) error {
	if err := validInstance(inst); err != nil {
		return badName("start", err)
	}
	return c.change("start "+string(inst), func(w *world) (map[cloud.VolumeID]attachment, error) {
		in, ok := w.Instances[inst]
		switch {
		case !ok:
			return nil, fmt.Errorf("instance %s not found: %w", inst, cloud.ErrNotFound)
		case in.Running:
			return nil, errUnchanged
		}
		in.Running = true
		w.Instances[inst] = in
		return nil, nil
	})
}

// Replace gives node a new instance: the one backing it, if any, is
// deleted (as Delete does), and a new running instance with a new ID
// backs node. It returns the new ID.
func (c *Cloud) Replace(node cloud.NodeName) (cloud.InstanceID, error) {
	if err := validNode(node); err != nil {
		return "", badName("replace", err)
	}
	var id cloud.InstanceID
	err := c.change("replace the instance of node "+string(node), func(w *world) (map[cloud.VolumeID]attachment, error) {
		var gone map[cloud.VolumeID]attachment
		if old, ok := w.nodes[node]; ok {
			gone = w.deleteInstance(old)
		}
		id = w.addInstance(node, c.defLimit)
		return gone, nil
	})
	return id, err
}

// Delete deletes inst for good, detaching its volumes: calls naming it
// fail with cloud.ErrNotFound from then on, and its node has no instance
// until AddInstance or Replace gives it one. An unknown instance fails
// with cloud.ErrNotFound.
func (c *Cloud) Delete(inst cloud.InstanceID) error {
	if err := validInstance(inst); err != nil {
		return badName("delete", err)
	}
	return c.change("delete "+string(inst), func(w *world) (map[cloud.VolumeID]attachment, error) {
		if _, ok := w.Instances[inst]; !ok {
			return nil, fmt.Errorf("instance %s not found: %w", inst, cloud.ErrNotFound)
		}
		return w.deleteInstance(inst), nil
	})
}

// SetAttachLimit sets how many volumes inst may have attached (negative:
// 0). Lowering it below the current count detaches nothing; further
// attaches are refused. An unknown instance fails with cloud.ErrNotFound.
func (c *Cloud) SetAttachLimit(inst cloud.InstanceID, n int) error {
	if err := validInstance(inst); err != nil {
		return badName("set attach limit", err)
	}
	return c.change(fmt.Sprintf("set the attach limit of %s", inst), func(w *world) (map[cloud.VolumeID]attachment, error) {
		in, ok := w.Instances[inst]
		switch {
		case !ok:
			return nil, fmt.Errorf("instance %s not found: %w", inst, cloud.ErrNotFound)
		case in.Limit == max(n, 0):
			return nil, errUnchanged
		}
		in.Limit = max(n, 0)
		w.Instances[inst] = in
		return nil, nil
	})
}

// ConsoleDetach detaches vol from inst from the cloud's side while the
// instance runs (an operator in a cloud console), releasing its device.
// Detaching what is not attached does nothing; an unknown volume or
// instance fails with cloud.ErrNotFound.
func (c *Cloud) ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error {
	if err := validCall("console detach", vol, inst); err != nil {
		return err
	}
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	a, ok, err := c.cur.Load().checkDetach(vol, inst)
	if err != nil || !ok {
		return err
	}
	return c.detachLocked(fmt.Sprintf("console detach %s from %s", vol, inst), vol, inst, a)
}

// change applies f to a copy of the world, writes it and publishes it,
// then releases the devices of the attachments f removed. f's error
// changes nothing (errUnchanged: and is no error).
func (c *Cloud) change(what string, f func(*world) (map[cloud.VolumeID]attachment, error)) error {
	c.op.Lock()
	defer c.op.Unlock()
	if err := c.openLocked(); err != nil {
		return err
	}
	next := c.cur.Load().clone()
	gone, err := f(next)
	switch {
	case errors.Is(err, errUnchanged):
		return nil
	case err != nil:
		return fmt.Errorf("loop: %s: %w", what, err)
	}
	if err := c.commit(next); err != nil {
		return fmt.Errorf("loop: %s: %w", what, err)
	}
	return c.releaseGone(what, gone)
}
