//go:build ignore

// benchcheck reads tether bench --json on stdin and fails unless every
// field of the result is present, with every phase, and the run
// converged: `go run .ci/benchcheck.go [flags] < bench.json`. With
// -mounter it wants that mounter; with -max-start-ratio the fleet start
// within that many times bare Proto.Actor delivering its messages (the
// baseline measured in the same run); with -max-heap the live heap per
// volume at most that many bytes.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
)

func main() {
	mounter := flag.String("mounter", "", "the mounter the run must report (empty: any)")
	maxRatio := flag.Float64("max-start-ratio", 0, "largest fleet_start baseline_ratio (0: not checked)")
	maxHeap := flag.Float64("max-heap", 0, "largest heap_bytes_per_volume (0: not checked)")
	flag.Parse()
	var r map[string]json.RawMessage
	dec := json.NewDecoder(os.Stdin)
	if err := dec.Decode(&r); err != nil {
		fail("not JSON: %v", err)
	}
	for _, k := range []string{"volumes", "nodes", "attach_limit", "cloud_latency_ms", "mounter", "sync_period_seconds", "batch_size",
		"machines_apart", "phases", "heap_bytes_per_volume", "peak_rss_bytes", "syscalls_per_op", "baseline_seconds", "baseline_messages", "baseline_actors"} {
		if _, ok := r[k]; !ok {
			fail("the result lacks %q", k)
		}
	}
	var phases []map[string]json.RawMessage
	must(json.Unmarshal(r["phases"], &phases), "phases")
	want := []string{"fleet_start", "verify", "restart", "node_loss", "churn", "teardown"}
	if len(phases) != len(want) {
		fail("%d phases, want %v", len(phases), want)
	}
	var startRatio float64
	for i, p := range phases {
		for _, k := range []string{"name", "seconds", "messages", "cloud_calls", "fsyncs", "mounts", "baseline_ratio"} {
			if _, ok := p[k]; !ok {
				fail("phase %d lacks %q", i, k)
			}
		}
		var name string
		if err := json.Unmarshal(p["name"], &name); err != nil || name != want[i] {
			fail("phase %d is %s, want %q", i, p["name"], want[i])
		}
		var secs, ratio float64
		if err := json.Unmarshal(p["seconds"], &secs); err != nil || secs <= 0 {
			fail("phase %s: seconds %s", name, p["seconds"])
		}
		must(json.Unmarshal(p["baseline_ratio"], &ratio), name+" baseline_ratio")
		if name == "fleet_start" {
			startRatio = ratio
		}
		if name == "restart" {
			var mounts int64
			if must(json.Unmarshal(p["mounts"], &mounts), "restart mounts"); mounts != 0 {
				fail("the restart asked for %d mounts: the agents did not find their mounts again", mounts)
			}
		}
	}
	var heap, baseline float64
	var rss int64
	var got string
	must(json.Unmarshal(r["heap_bytes_per_volume"], &heap), "heap_bytes_per_volume")
	must(json.Unmarshal(r["peak_rss_bytes"], &rss), "peak_rss_bytes")
	must(json.Unmarshal(r["baseline_seconds"], &baseline), "baseline_seconds")
	must(json.Unmarshal(r["mounter"], &got), "mounter")
	if heap <= 0 || rss <= 0 || baseline <= 0 || startRatio <= 0 {
		fail("heap_bytes_per_volume %v, peak_rss_bytes %v, baseline_seconds %v, fleet_start baseline_ratio %v: want all positive", heap, rss, baseline, startRatio)
	}
	if *mounter != "" && got != *mounter {
		fail("mounter %q, want %q", got, *mounter)
	}
	if *maxRatio > 0 && startRatio > *maxRatio {
		fail("fleet start %.1fx bare Proto.Actor, want at most %.1fx", startRatio, *maxRatio)
	}
	if *maxHeap > 0 && heap > *maxHeap {
		fail("heap %.0f bytes per volume, want at most %.0f", heap, *maxHeap)
	}
	fmt.Printf("bench JSON: every field present; mounter %s, fleet start %.1fx bare Proto.Actor, heap %.0f B/volume\n", got, startRatio, heap)
}

func must(err error, what string) {
	if err != nil {
		fail("%s: %v", what, err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchcheck: "+format+"\n", args...)
	os.Exit(1)
}
