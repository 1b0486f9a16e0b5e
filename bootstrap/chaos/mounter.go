package chaos

import (
	"path/filepath"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/mount"
)

// WrapMounter checks I3 on node n: after every successful stage or publish
// the volume must be attached to n's instance in the cloud, and the
// persisted node status must list it in VolumesInUse and VolumesAttached.
func (c *Checker) WrapMounter(n cloud.NodeName, m mount.Mounter) mount.Mounter {
	return &i3Mounter{Mounter: m, c: c, node: n}
}

type i3Mounter struct {
	mount.Mounter
	c    *Checker
	node cloud.NodeName
}

func (m *i3Mounter) Stage(source, target string) error {
	err := m.Mounter.Stage(source, target)
	if err == nil {
		m.check("stage", cloud.VolumeID(filepath.Base(target)))
	}
	return err
}

func (m *i3Mounter) Publish(staged, target string, ro bool) error {
	err := m.Mounter.Publish(staged, target, ro)
	if err == nil {
		m.check("publish", cloud.VolumeID(filepath.Base(target)))
	}
	return err
}

func (m *i3Mounter) Unstage(target string) error {
	err := m.Mounter.Unstage(target)
	m.c.Note(cloud.VolumeID(filepath.Base(target)), "unstage on %s: %v", m.node, err)
	return err
}

func (m *i3Mounter) Unpublish(target string) error {
	err := m.Mounter.Unpublish(target)
	m.c.Note(cloud.VolumeID(filepath.Base(target)), "unpublish on %s: %v", m.node, err)
	return err
}

func (m *i3Mounter) check(op string, vol cloud.VolumeID) {
	c := m.c
	inst, _ := c.Cloud.InstanceOf(m.node)
	attached := slices.Contains(c.Cloud.Attachments()[vol], inst)
	st, _, err := c.Store().NodeStatus(m.node)
	_, listed := st.VolumesAttached[vol]
	c.mu.Lock()
	defer c.mu.Unlock()
	c.note(vol, "%s on %s", op, m.node)
	switch {
	case c.forced[volNode{vol, m.node}]:
	case !attached && c.Now().Sub(c.terminated[m.node]) < 5*time.Second:
		// The instance died under a mount the agent had every right to
		// make: the cloud took the volume, tether did not misbehave.
	case !attached:
		c.violate("I3", vol, m.node, "%s while not attached there in the cloud", op)
	case err == nil && (!listed || !st.VolumesInUse[vol]):
		c.violate("I3", vol, m.node, "%s while the node status lists it attached=%v in-use=%v", op, listed, st.VolumesInUse[vol])
	}
}
