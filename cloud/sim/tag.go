package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tether/tether/cloud"
)

// Tag is the owner tag of this cloud account ("" if none was set): the
// identity of the tether whose resources these are, as a real cloud tags
// disks and instances with the cluster that made them. tether compares it
// with its store's identity at startup, so that a lost or replaced store is
// noticed before anything acts on it.
func (c *Cloud) Tag() string {
	c.lockSettled()
	defer c.mu.Unlock()
	return c.tag
}

// SetTag sets the owner tag; with Config.StatePath it is durable before
// SetTag returns (a failed write leaves the old tag).
func (c *Cloud) SetTag(tag string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tag = tag
	if err := c.commitLocked(); err != nil { // reverts the tag
		return fmt.Errorf("sim: set tag: %w", err)
	}
	return nil
}

// InventoryVolume is one disk of Inventory.
type InventoryVolume struct {
	ID   cloud.VolumeID
	Mode cloud.AccessMode
	// ReadOnly: a ReadOnlyMany disk, for a cloud that knows (never the
	// sim: see cloud.VolumeSpec.ReadOnly).
	ReadOnly bool
	Attached []cloud.NodeName // nodes whose instances have it attached, sorted
}

// InventoryInstance is one instance of Inventory.
type InventoryInstance struct {
	ID      cloud.InstanceID
	Node    cloud.NodeName
	Running bool
}

// Inventory is everything the account holds, sorted by ID: what an operator
// reads in the cloud's console. It is not part of cloud.Provider (the
// controller never lists the account); tether's store recovery uses it.
type Inventory struct {
	Volumes   []InventoryVolume
	Instances []InventoryInstance
}

// Empty reports whether the account holds nothing.
func (inv Inventory) Empty() bool { return len(inv.Volumes) == 0 && len(inv.Instances) == 0 }

// Attachments counts the volume attachments of inv.
func (inv Inventory) Attachments() int {
	n := 0
	for _, v := range inv.Volumes {
		n += len(v.Attached)
	}
	return n
}

// Inventory lists every disk and instance.
func (c *Cloud) Inventory() Inventory {
	c.lockSettled()
	defer c.mu.Unlock()
	var inv Inventory
	for _, id := range sortedKeys(c.vols) {
		v := c.vols[id]
		iv := InventoryVolume{ID: id, Mode: v.mode}
		for inst := range v.attached {
			if in, ok := c.insts[inst]; ok {
				iv.Attached = append(iv.Attached, in.node)
			}
		}
		slices.SortFunc(iv.Attached, func(a, b cloud.NodeName) int { return strings.Compare(string(a), string(b)) })
		inv.Volumes = append(inv.Volumes, iv)
	}
	for _, id := range sortedKeys(c.insts) {
		in := c.insts[id]
		inv.Instances = append(inv.Instances, InventoryInstance{ID: id, Node: in.node, Running: in.running})
	}
	return inv
}
