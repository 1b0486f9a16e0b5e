package chaos

import (
	"path/filepath"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// WrapMounter records node n's mount operations where they happen: a stage
// or publish is recorded BEFORE its mount call (from then on the volume
// counts as mounted: a detach may not pull it from under a mount in
// progress) and when it returns; an unstage or unpublish when it returns
// (the volume counts as mounted until then). After a failed operation the
// target is inspected at once, by the goroutine that ran it (the agent
// serializes operations per target, so nothing else moves it), and what it
// shows is recorded: a failed mount that left nothing mounted is not a
// mount, a failed unmount that left one still is; with CheckImages, so is
// the image of the device a mount shows.
func (c *Checker) WrapMounter(n cloud.NodeName, m mount.Mounter) mount.Mounter {
	return &recMounter{Mounter: m, c: c, node: n}
}

type recMounter struct {
	mount.Mounter
	c    *Checker
	node cloud.NodeName
}

func (m *recMounter) Stage(source, target string) error {
	return m.mount("stage", target, func() error { return m.Mounter.Stage(source, target) })
}

func (m *recMounter) Publish(staged, target string, ro bool) error {
	return m.mount("publish", target, func() error { return m.Mounter.Publish(staged, target, ro) })
}

func (m *recMounter) Unstage(target string) error {
	return m.unmount("unstage", target, func() error { return m.Mounter.Unstage(target) })
}

func (m *recMounter) Unpublish(target string) error {
	return m.unmount("unpublish", target, func() error { return m.Mounter.Unpublish(target) })
}

func (m *recMounter) mount(op, target string, f func() error) error {
	r := record{kind: recMountStart, node: m.node, vol: cloud.VolumeID(filepath.Base(target)), op: op, target: target}
	m.c.add(r)
	err := f()
	r.kind, r.mounted = recMountEnd, err == nil || m.shows(target)
	if err != nil {
		r.err = err.Error()
	}
	if r.mounted {
		m.c.readImages(&r)
	}
	m.c.add(r)
	return err
}

func (m *recMounter) unmount(op, target string, f func() error) error {
	err := f()
	r := record{kind: recUnmountEnd, node: m.node, vol: cloud.VolumeID(filepath.Base(target)), op: op, target: target}
	if err != nil {
		r.err, r.mounted = err.Error(), m.shows(target)
	}
	m.c.add(r)
	return err
}

// shows reports whether a mount is at target; unsure counts as yes.
func (m *recMounter) shows(target string) bool {
	st, _, err := m.Mounter.Inspect(target)
	return err != nil || st == mount.Mounted
}

// Unwrap returns the recorded mounter (mount.Unwrapper).
func (m *recMounter) Unwrap() mount.Mounter { return m.Mounter }
