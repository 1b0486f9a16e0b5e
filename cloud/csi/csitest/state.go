package csitest

import (
	"fmt"
	"maps"
	"slices"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
)

// AddVolume creates a volume whose ID (and name) is id, as if created
// outside tether; an existing one is left alone.
func (d *Driver) AddVolume(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.vols[id] == nil {
		d.vols[id] = d.newVolume(id, id, 1<<30)
		d.byName[id] = id
	}
}

// Publish publishes vol to node directly, read-write, with no checks (an
// attachment made by someone else). It reports false if vol is unknown.
func (d *Driver) Publish(vol, node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[vol]
	if v == nil {
		return false
	}
	v.published[node] = publication{mode: spec.VolumeCapability_AccessMode_SINGLE_NODE_WRITER, context: d.publishContext(v, node)}
	return true
}

// PublishedTo lists the nodes vol is published to, sorted.
func (d *Driver) PublishedTo(vol string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.publishedTo(vol)
}

func (d *Driver) publishedTo(vol string) []string {
	v := d.vols[vol]
	if v == nil {
		return nil
	}
	var out []string
	for n := range v.published {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Staged lists vol's staging paths on node, sorted.
func (d *Driver) Staged(vol, node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.vols[vol]; v != nil {
		return sortedKeys(v.staged[node])
	}
	return nil
}

// Targets lists vol's target paths on node, sorted.
func (d *Driver) Targets(vol, node string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.vols[vol]; v != nil {
		return sortedKeys(v.targets[node])
	}
	return nil
}

// VolumeContext is the volume_context of volume id (Config.VolumeContext),
// nil if it has none or is unknown.
func (d *Driver) VolumeContext(id string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v := d.vols[id]; v != nil {
		return maps.Clone(v.context)
	}
	return nil
}

// sortedKeys lists m's keys, sorted (nil if none).
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// Unpublish unpublishes vol from node directly, with no checks (someone
// else's detach). It reports false if vol is unknown.
func (d *Driver) Unpublish(vol, node string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := d.vols[vol]
	if v == nil {
		return false
	}
	delete(v.published, node)
	return true
}

// Describe is the driver's state in one line per volume (for failure
// messages).
func (d *Driver) Describe() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := ""
	for _, id := range sortedKeys(d.vols) {
		v := d.vols[id]
		s += fmt.Sprintf("%s: published to %v", id, d.publishedTo(id))
		for n, paths := range v.staged {
			s += fmt.Sprintf(", staged on %s at %v", n, sortedKeys(paths))
		}
		for n, paths := range v.targets {
			s += fmt.Sprintf(", published on %s at %v", n, sortedKeys(paths))
		}
		s += "\n"
	}
	if s == "" {
		return "no volumes\n"
	}
	return s
}
