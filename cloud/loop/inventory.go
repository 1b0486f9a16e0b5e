package loop

import (
	"maps"
	"slices"

	"github.com/tether/tether/cloud"
)

// InventoryVolume is one volume of Inventory.
type InventoryVolume struct {
	ID       cloud.VolumeID
	Mode     cloud.AccessMode
	Size     int64
	ReadOnly bool
	Attached []cloud.InstanceID // sorted
}

// InventoryInstance is one instance of Inventory.
type InventoryInstance struct {
	ID      cloud.InstanceID
	Node    cloud.NodeName
	Running bool
}

// Inventory is everything the cloud holds, sorted by ID: what an operator
// reads in a cloud's console. It is not part of cloud.Provider (the
// controller never lists the account); tether's start-up checks and its
// store recovery read it, as they read the sim's.
type Inventory struct {
	Volumes   []InventoryVolume
	Instances []InventoryInstance
}

// Inventory lists every volume and instance as the published state has
// them; a closed Cloud lists nothing.
func (c *Cloud) Inventory() Inventory {
	var inv Inventory
	w, err := c.view()
	if err != nil {
		return inv
	}
	for _, id := range slices.Sorted(maps.Keys(w.Volumes)) {
		v := w.Volumes[id]
		inv.Volumes = append(inv.Volumes, InventoryVolume{ID: id, Mode: v.Mode.mode(), Size: v.Size, ReadOnly: v.ReadOnly,
			Attached: slices.Sorted(maps.Keys(v.Attached))})
	}
	for _, id := range slices.Sorted(maps.Keys(w.Instances)) {
		in := w.Instances[id]
		inv.Instances = append(inv.Instances, InventoryInstance{ID: id, Node: in.Node, Running: in.Running})
	}
	return inv
}
