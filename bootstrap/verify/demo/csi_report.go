package demo

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/tether/tether/cloud"
)

// CSIReport is what the fake CSI driver saw of the demo, from its own log
// of the calls it received.
type CSIReport struct {
	// Driver is the driver's name; Nodes each node's node ID, with
	// MaxVolumesPerNode its plugin's limit.
	Driver            string                    `json:"driver"`
	Nodes             map[cloud.NodeName]string `json:"nodes"`
	MaxVolumesPerNode int64                     `json:"max_volumes_per_node"`
	// Capabilities are the driver's shape: what it offers, and what it
	// lacks that tether copes without.
	Capabilities []string `json:"capabilities"`
	// AttachmentsVerifiedBy is how tether checks what is published: the
	// driver's listing if it can say, else tether's own records.
	AttachmentsVerifiedBy string `json:"attachments_verified_by"`
	// Calls counts the calls about volumes the driver received, by
	// method: the six that publish and stage and undo them, and
	// ControllerGetVolume (whose loose published_node_ids tether must
	// not read), always present.
	Calls map[string]int `json:"calls"`
	// Life is the calls about one workload's volume over its whole life,
	// in the order the driver received them.
	Life WorkloadLife `json:"workload_life"`
}

// WorkloadLife is the CSI calls about one volume of one workload, from
// its apply to its delete.
type WorkloadLife struct {
	Workload string         `json:"workload"`
	Volume   cloud.VolumeID `json:"volume"`
	Calls    []string       `json:"calls"`
}

// lifeOf is the workload whose life the report follows, and its volume:
// one that stays where it is placed until everything is deleted, and the
// only one that uses that volume.
const lifeOf, lifeVolume = "app-2", cloud.VolumeID("data-2")

// csiReport reads the driver's log.
func (d *demo) csiReport() *CSIReport {
	r := &CSIReport{
		Driver: CSIDriverName, Nodes: d.fake.nodeIDs(d.e.NodeNames), MaxVolumesPerNode: CSIMaxVolumes,
		Capabilities: []string{"PUBLISH_UNPUBLISH_VOLUME", "GET_VOLUME", "STAGE_UNSTAGE_VOLUME",
			"no LIST_VOLUMES_PUBLISHED_NODES (published_node_ids filled loosely all the same)"},
		AttachmentsVerifiedBy: verifiedBy(cloud.ListingOf(d.e.Account)),
		Calls:                 map[string]int{},
		Life:                  WorkloadLife{Workload: lifeOf, Volume: lifeVolume},
	}
	for _, m := range append(slices.Clone(mutating), "ControllerGetVolume") {
		r.Calls[m] = 0
	}
	for _, c := range d.fake.d.Calls() {
		r.Calls[c.Method]++
		if c.Volume == string(lifeVolume) {
			r.Life.Calls = append(r.Life.Calls, d.callLine(c))
		}
	}
	return r
}

// verifiedBy says how tether checks attachments with a listing l.
func verifiedBy(l cloud.Listing) string {
	switch l {
	case cloud.ListingNone:
		return "tether's records"
	case cloud.ListingMayOverstate:
		return "the driver's listing (LIST_VOLUMES_PUBLISHED_NODES)"
	}
	return "the driver's listing"
}

// WriteText writes r for a reader: the driver, how attachments are
// verified, the call counts (each call next to its reverse) and one
// workload's life.
func (r *CSIReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "\ncsi driver %s: %s\n", r.Driver, strings.Join(r.Capabilities, ", "))
	for _, n := range slices.Sorted(maps.Keys(r.Nodes)) {
		fmt.Fprintf(w, "  node %s is node ID %s (max_volumes_per_node %d)\n", n, r.Nodes[n], r.MaxVolumesPerNode)
	}
	fmt.Fprintf(w, "  attachments verified by %s\n", r.AttachmentsVerifiedBy)
	fmt.Fprintln(w, "  calls:")
	for i := 0; i+1 < len(mutating); i += 2 {
		fmt.Fprintf(w, "    %-28s %s\n", fmt.Sprintf("%s %d", mutating[i], r.Calls[mutating[i]]), fmt.Sprintf("%s %d", mutating[i+1], r.Calls[mutating[i+1]]))
	}
	var others []string
	for _, m := range slices.Sorted(maps.Keys(r.Calls)) {
		if !slices.Contains(mutating, m) {
			others = append(others, fmt.Sprintf("%s %d", m, r.Calls[m]))
		}
	}
	fmt.Fprintf(w, "    %s\n", strings.Join(others, ", "))
	fmt.Fprintf(w, "  %s's life as the driver saw it (the calls about %s):\n", r.Life.Workload, r.Life.Volume)
	for _, c := range r.Life.Calls {
		fmt.Fprintln(w, "    "+c)
	}
}
