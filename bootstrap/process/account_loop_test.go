package process

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/loop"
	"github.com/tether/tether/cloud/sim"
)

// The observers of the loop account hear what changed between two
// inventories: removals with the reason given (the instance's node named
// even when the instance is gone), then additions.
func TestAttachmentChanges(t *testing.T) {
	before := loop.Inventory{
		Volumes: []loop.InventoryVolume{
			{ID: "a", Mode: cloud.Exclusive, Attached: []cloud.InstanceID{"i-n1-1"}},
			{ID: "m", Mode: cloud.MultiNode, Attached: []cloud.InstanceID{"i-n1-1", "i-n2-2"}},
		},
		Instances: []loop.InventoryInstance{{ID: "i-n1-1", Node: "n1", Running: true}, {ID: "i-n2-2", Node: "n2", Running: true}},
	}
	after := loop.Inventory{
		Volumes: []loop.InventoryVolume{
			{ID: "a", Mode: cloud.Exclusive, Attached: []cloud.InstanceID{"i-n2-2"}},
			{ID: "m", Mode: cloud.MultiNode, Attached: []cloud.InstanceID{"i-n2-2"}},
		},
		Instances: []loop.InventoryInstance{{ID: "i-n2-2", Node: "n2", Running: true}},
	}
	want := []sim.Change{
		{Volume: "a", Instance: "i-n1-1", Node: "n1", Mode: cloud.Exclusive, Reason: sim.ReasonDelete},
		{Volume: "m", Instance: "i-n1-1", Node: "n1", Mode: cloud.MultiNode, Reason: sim.ReasonDelete},
		{Volume: "a", Instance: "i-n2-2", Node: "n2", Mode: cloud.Exclusive, Attached: true, Reason: sim.ReasonAttach},
	}
	if got := attachmentChanges(before, after, sim.ReasonDelete); !reflect.DeepEqual(got, want) {
		t.Errorf("attachmentChanges = %+v\nwant %+v", got, want)
	}
	if got := attachmentChanges(after, after, sim.ReasonDetach); len(got) != 0 {
		t.Errorf("no change: %+v", got)
	}
}

// A data directory keeps its cloud: a durable start with the loop cloud
// on one that ran the sim refuses, naming the flag, before it opens the
// loop cloud.
func TestCloudKindKeptByDataDir(t *testing.T) {
	dir := newLoopDir(t)
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Nodes, cfg.Durable = dir, 1, true
	cfg.LogOutput, cfg.LogLevel = testLog{t}, "warn"
	useSymlinks(t, &cfg)
	e, err := StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	cfg.Cloud = CloudLoop
	_, err = StartEmbedded(cfg)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "was run with --cloud sim") {
		t.Fatalf("a loop start on the sim's data directory: %v; want a refusal", err)
	}
	if exists(dir + "/" + LoopDir) {
		t.Error("the refused start made the loop cloud's directory")
	}
}
