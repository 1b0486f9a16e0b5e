package bench

import (
	"testing"

	"github.com/tether/tether/cloud/sim"
)

// The ground truth the phases wait for catches what differs from what is
// wanted, and volumes attached or mounted twice.
func TestTruth(t *testing.T) {
	tr := newTruth()
	tr.setWant("v1", "n1")
	if ok, v := tr.matches(); ok || v != "v1" {
		t.Fatalf("nothing attached yet: matches = %v, %q", ok, v)
	}
	tr.observe(sim.Change{Volume: "v1", Node: "n1", Attached: true})
	if ok, _ := tr.matches(); ok {
		t.Fatal("attached but not mounted: matches")
	}
	tr.publish("n1", "/d/nodes/n1/pods/w1/volumes/tether-sim/v1")
	if ok, v := tr.matches(); !ok {
		t.Fatalf("attached and mounted where wanted: differs at %q", v)
	}
	tr.observe(sim.Change{Volume: "v1", Node: "n2", Attached: true}) // broken on purpose
	if ok, _ := tr.matches(); ok {
		t.Fatal("attached on two nodes: matches")
	}
	if got := tr.twice(); len(got) != 1 || got[0] != "v1" {
		t.Fatalf("twice = %v, want [v1]", got)
	}
	tr.observe(sim.Change{Volume: "v1", Node: "n2"})
	tr.publish("n2", "/d/nodes/n2/pods/w9/volumes/tether-sim/v1") // mounted on another node too
	if got := tr.twice(); len(got) != 1 {
		t.Fatalf("mounted on two nodes: twice = %v", got)
	}
	tr.unpublish("n2", "/d/nodes/n2/pods/w9/volumes/tether-sim/v1")
	tr.observe(sim.Change{Volume: "v2", Node: "n1", Attached: true}) // not wanted anywhere
	if ok, v := tr.matches(); ok || v != "v2" {
		t.Fatalf("an unwanted attachment: matches = %v, %q", ok, v)
	}
	tr.observe(sim.Change{Volume: "v2", Node: "n1"})
	tr.setWant("v1", "")
	if ok, _ := tr.matches(); ok {
		t.Fatal("wanted nowhere but still attached: matches")
	}
	tr.observe(sim.Change{Volume: "v1", Node: "n1"})
	tr.unpublish("n1", "/d/nodes/n1/pods/w1/volumes/tether-sim/v1")
	if ok, v := tr.matches(); !ok || len(tr.twice()) != 0 {
		t.Fatalf("all gone: matches = %v at %q", ok, v)
	}
}
