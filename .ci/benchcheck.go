//go:build ignore

// benchcheck reads tether bench --json on stdin and fails unless every
// field the acceptance names is present, with every phase, and the run
// converged: `go run .ci/benchcheck.go < bench.json`.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

func main() {
	var r struct {
		Phases []map[string]json.RawMessage `json:"phases"`
		Heap   *float64                     `json:"heap_bytes_per_volume"`
		RSS    *int64                       `json:"peak_rss_bytes"`
	}
	dec := json.NewDecoder(os.Stdin)
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		fail("not JSON: %v", err)
	}
	want := []string{"fleet_start", "verify", "restart", "node_loss", "churn", "teardown"}
	if len(r.Phases) != len(want) {
		fail("%d phases, want %v", len(r.Phases), want)
	}
	for i, p := range r.Phases {
		for _, k := range []string{"name", "seconds", "messages", "cloud_calls", "fsyncs", "baseline_ratio"} {
			if _, ok := p[k]; !ok {
				fail("phase %d lacks %q", i, k)
			}
		}
		var name string
		if err := json.Unmarshal(p["name"], &name); err != nil || name != want[i] {
			fail("phase %d is %s, want %q", i, p["name"], want[i])
		}
		var secs float64
		if err := json.Unmarshal(p["seconds"], &secs); err != nil || secs <= 0 {
			fail("phase %s: seconds %s", name, p["seconds"])
		}
	}
	if r.Heap == nil || *r.Heap <= 0 || r.RSS == nil || *r.RSS <= 0 {
		fail("heap_bytes_per_volume or peak_rss_bytes missing or not positive")
	}
	fmt.Println("bench JSON: every field present")
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchcheck: "+format+"\n", args...)
	os.Exit(1)
}
