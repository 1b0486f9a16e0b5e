package distributed_test

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/verify/bench"
)

// BenchmarkFleetStart runs one shape on both sides, as `tether bench
// --distributed` does (bench.RunDistributed: the embedded bench, then a
// fleet of 3 controller members, one agent process per node, etcd and the
// cloud service, every part its own process on loopback, through the same
// phases), for each of -fleet.volumes volumes over -fleet.nodes nodes (default
// 100: 100 agent processes, about 30 MB each, 3 GB), every sim instance
// with the attach limit the largest size needs (bench.PeakPerNode, churn
// included), the same for every size and both sides.
//
//	go test -run '^$' -bench FleetStart -benchtime 1x -timeout 90m ./bootstrap/process/distributed/
//
// ns/op and fleet_start_s are the distributed fleet start alone;
// ratio_to_embedded is it over the embedded fleet start of the same run;
// etcd_requests/doc is etcd's requests during it per document applied
// (its own counters); each other phase reports its seconds and ratio.
// A failed run keeps the fleet's directory (every process's log) and
// logs where it is.
func BenchmarkFleetStart(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*fleetVolumes, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 1 {
			b.Fatalf("-fleet.volumes %q: want volume counts, comma-separated", *fleetVolumes)
		}
		sizes = append(sizes, v)
	}
	limit := max(39, bench.PeakPerNode(slices.Max(sizes), *fleetNodes))
	for _, v := range sizes {
		b.Run(fmt.Sprintf("volumes=%d", v), func(b *testing.B) {
			cfg := bench.DistConfig{Config: bench.DefaultConfig(), Controllers: 3, Binary: binary}
			cfg.Volumes, cfg.Nodes, cfg.AttachLimit, cfg.Dir, cfg.PhaseTimeout = v, *fleetNodes, limit, b.TempDir(), *fleetDeadline
			var start, ratio, perDoc float64
			b.StopTimer()
			for range b.N {
				res, err := bench.RunDistributed(context.Background(), cfg)
				if err != nil {
					b.Fatalf("%d volumes over %d nodes: %v", v, cfg.Nodes, err)
				}
				for _, p := range res.Distributed.Phases {
					if !p.Applicable {
						continue
					}
					b.Logf("%s: %.2fs, %.2fx embedded, %d etcd requests (%v), %s", p.Name, p.Seconds, *p.RatioToEmbedded, p.StoreRequests.Total, p.StoreRequests.ByMethod, p.Note)
					if p.Name == "fleet_start" {
						start += p.Seconds
						ratio += *p.RatioToEmbedded
						perDoc += *p.StoreRequests.PerDocument
					}
				}
			}
			n := float64(b.N)
			b.ReportMetric(start/n*1e9, "ns/op")
			b.ReportMetric(start/n, "fleet_start_s")
			b.ReportMetric(ratio/n, "ratio_to_embedded")
			b.ReportMetric(perDoc/n, "etcd_requests/doc")
		})
	}
}

var (
	fleetVolumes  = flag.String("fleet.volumes", "1000,3000,10000", "BenchmarkFleetStart: the volume counts, comma-separated")
	fleetNodes    = flag.Int("fleet.nodes", 100, "BenchmarkFleetStart: nodes (agent processes) on both sides")
	fleetDeadline = flag.Duration("fleet.deadline", 10*time.Minute, "BenchmarkFleetStart: how long each phase may take before the benchmark fails")
)
