package syncer

import (
	"sort"

	"github.com/tether/tether/cloud"
)

// Batches splits nodes (sorted for determinism) into groups of at most size.
func Batches(nodes []cloud.NodeName, size int) [][]cloud.NodeName {
	if size < 1 {
		size = 1
	}
	sorted := append([]cloud.NodeName(nil), nodes...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	var out [][]cloud.NodeName
	for len(sorted) > 0 {
		n := min(size, len(sorted))
		out = append(out, sorted[:n:n])
		sorted = sorted[n:]
	}
	return out
}

// Finding is a difference between belief and truth, to tell the volume's
// actor.
type Finding struct {
	Volume     cloud.VolumeID
	Node       cloud.NodeName
	Attached   bool // false: believed attached, the cloud says not (lost); true: attached but not believed (unknown to the controller), or attached at another device
	DevicePath string
	// Moved: believed attached and attached, but the cloud names another
	// device than the one believed (an attach that a dead controller
	// started and a new one repeated may have got a new device): the
	// cloud's device is the one the agent must mount.
	Moved bool
}

// Compare returns the findings for the nodes present in actual (nodes whose
// cloud call failed are absent and change nothing), sorted by node then
// volume. believed maps each node's volumes to the device paths the
// controller recorded ("" when it does not know one: never a finding).
func Compare(believed map[cloud.NodeName]map[cloud.VolumeID]string, actual map[cloud.NodeName]map[cloud.VolumeID]string) []Finding {
	var out []Finding
	for node, has := range actual {
		for vol := range believed[node] {
			if _, ok := has[vol]; !ok {
				out = append(out, Finding{Volume: vol, Node: node})
			}
		}
		for vol, dev := range has {
			was, known := believed[node][vol]
			switch {
			case !known:
				out = append(out, Finding{Volume: vol, Node: node, Attached: true, DevicePath: dev})
			case was != "" && dev != "" && was != dev:
				out = append(out, Finding{Volume: vol, Node: node, Attached: true, DevicePath: dev, Moved: true})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Node != out[j].Node {
			return out[i].Node < out[j].Node
		}
		return out[i].Volume < out[j].Volume
	})
	return out
}
