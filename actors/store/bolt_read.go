package store

import (
	"fmt"
	"sort"

	bolt "go.etcd.io/bbolt"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// view runs fn in a read transaction and names the method on failure.
func (b *Bolt) view(what string, fn func(tx *bolt.Tx) error) error {
	if err := b.guard(b.db.View, fn); err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	return nil
}

// Revision implements Store.
func (b *Bolt) Revision() (rev uint64, err error) {
	err = b.view("revision", func(tx *bolt.Tx) (err error) {
		rev, err = counter(tx, keyRevision)
		return err
	})
	return rev, err
}

func (b *Bolt) Volume(id cloud.VolumeID) (VolumeSpec, bool, error) {
	var rec volumeRecord
	var ok bool
	err := b.view("volume", func(tx *bolt.Tx) (err error) {
		rec, ok, err = get[volumeRecord](tx, bucketVolumes, string(id))
		return err
	})
	return rec.spec(), ok, err
}

// VolumesOf implements Store in one read transaction.
func (b *Bolt) VolumesOf(ids []cloud.VolumeID) (map[cloud.VolumeID]VolumeSpec, error) {
	out := make(map[cloud.VolumeID]VolumeSpec, len(ids))
	err := b.view("volumes", func(tx *bolt.Tx) error {
		for _, id := range ids {
			rec, ok, err := get[volumeRecord](tx, bucketVolumes, string(id))
			if err != nil {
				return err
			}
			if ok {
				out[id] = rec.spec()
			}
		}
		return nil
	})
	return out, err
}

func (b *Bolt) Volumes() ([]VolumeSpec, error) {
	out := []VolumeSpec{}
	err := b.view("volumes", func(tx *bolt.Tx) error {
		return scan(tx, bucketVolumes, func(r volumeRecord) { out = append(out, r.spec()) })
	})
	return out, err
}

func (b *Bolt) Node(name cloud.NodeName) (NodeSpec, bool, error) {
	var rec nodeRecord
	var ok bool
	err := b.view("node", func(tx *bolt.Tx) (err error) {
		rec, ok, err = get[nodeRecord](tx, bucketNodes, string(name))
		return err
	})
	return rec.spec(), ok, err
}

func (b *Bolt) Nodes() ([]NodeSpec, error) {
	out := []NodeSpec{}
	err := b.view("nodes", func(tx *bolt.Tx) error {
		return scan(tx, bucketNodes, func(r nodeRecord) { out = append(out, r.spec()) })
	})
	return out, err
}

func (b *Bolt) Workload(uid string) (Workload, bool, error) {
	var rec workloadRecord
	var ok bool
	err := b.view("workload", func(tx *bolt.Tx) (err error) {
		rec, ok, err = get[workloadRecord](tx, bucketWorkloads, uid)
		return err
	})
	return rec.workload(), ok, err
}

func (b *Bolt) Workloads() ([]Workload, error) {
	return b.workloadsWhere("workloads", func(Workload) bool { return true })
}

func (b *Bolt) WorkloadsOn(node cloud.NodeName) (out []Workload, err error) {
	err = b.view("workloads on "+string(node), func(tx *bolt.Tx) (err error) {
		out, err = indexedWorkloads(tx, bucketIdxNodeWorkloads, string(node))
		return err
	})
	return out, err
}

func (b *Bolt) DesiredNodes(vol cloud.VolumeID) ([]cloud.NodeName, error) {
	var ws []Workload
	err := b.view("desired nodes of "+string(vol), func(tx *bolt.Tx) (err error) {
		ws, err = indexedWorkloads(tx, bucketIdxVolumeWorkloads, string(vol))
		return err
	})
	if err != nil {
		return nil, err
	}
	return DesiredNodesOf(ws, vol), nil
}

// workloadsWhere scans the workloads and returns those keep accepts, by Seq.
func (b *Bolt) workloadsWhere(what string, keep func(Workload) bool) ([]Workload, error) {
	out := []Workload{}
	err := b.view(what, func(tx *bolt.Tx) error {
		return scan(tx, bucketWorkloads, func(r workloadRecord) {
			if w := r.workload(); keep(w) {
				out = append(out, w)
			}
		})
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

func (b *Bolt) NodeStatus(name cloud.NodeName) (nodestatus.Status, bool, error) {
	var rec statusRecord
	var ok bool
	err := b.view("node status", func(tx *bolt.Tx) (err error) {
		rec, ok, err = get[statusRecord](tx, bucketStatuses, string(name))
		return err
	})
	return rec.status(), ok, err
}

func (b *Bolt) NodeStatuses() ([]nodestatus.Status, error) {
	out := []nodestatus.Status{}
	err := b.view("node statuses", func(tx *bolt.Tx) error {
		return scan(tx, bucketStatuses, func(r statusRecord) { out = append(out, r.status()) })
	})
	return out, err
}

func (b *Bolt) StatusesWithVolume(vol cloud.VolumeID) ([]nodestatus.Status, error) {
	var out []nodestatus.Status
	err := b.view("statuses with "+string(vol), func(tx *bolt.Tx) (err error) {
		out, err = statusesIndexed(tx, vol)
		return err
	})
	return out, err
}
