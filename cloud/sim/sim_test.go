package sim

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestNewDefaults(t *testing.T) {
	c := New(Config{})
	if got := c.BatchSize(); got != DefaultBatchSize {
		t.Errorf("BatchSize = %d, want %d", got, DefaultBatchSize)
	}
	if got := c.Calls().Calls[MethodInstanceID]; got != 0 {
		t.Errorf("BatchSize must not count as a call, got %d", got)
	}
	c.CreateVolume("v", cloud.MultiNode)
	inst := c.AddInstance("n1")
	ctx := context.Background()
	for i := range DefaultAttachLimit {
		vol := cloud.VolumeID(deviceName(i))
		c.CreateVolume(vol, cloud.Exclusive)
		if _, err := c.Attach(ctx, vol, inst); err != nil {
			t.Fatalf("attach #%d: %v", i, err)
		}
	}
	_, err := c.Attach(ctx, "v", inst)
	checkErr(t, err, cloud.KindLimitReached)
}

func TestAddInstance(t *testing.T) {
	c := New(Config{})
	a := c.AddInstance("n1")
	b := c.AddInstance("n2")
	if a != "i-n1-1" || b != "i-n2-2" {
		t.Errorf("IDs = %s, %s; want i-n1-1, i-n2-2", a, b)
	}
	if again := c.AddInstance("n1"); again != a {
		t.Errorf("AddInstance again = %s, want existing %s", again, a)
	}
	if err := c.Terminate(a); err != nil {
		t.Fatal(err)
	}
	if again := c.AddInstance("n1"); again != a {
		t.Errorf("AddInstance of terminated node = %s, want existing %s", again, a)
	}
	if got, ok := c.InstanceOf("n1"); !ok || got != a {
		t.Errorf("InstanceOf(n1) = %s, %v", got, ok)
	}
	if _, ok := c.InstanceOf("nope"); ok {
		t.Error("InstanceOf(nope) found an instance")
	}
	if !c.Running(b) || c.Running(a) || c.Running("i-nope") {
		t.Error("Running is wrong")
	}
	ids, err := c.AddInstances([]cloud.NodeName{"n3", "n1", "n4"})
	if err != nil || len(ids) != 3 || ids[0] != "i-n3-3" || ids[1] != a || ids[2] != "i-n4-4" {
		t.Errorf("AddInstances = %v, %v; want [i-n3-3 %s i-n4-4]", ids, err, a)
	}
}

func TestInstanceID(t *testing.T) {
	f := newFixture(t, Config{})
	if err := f.c.Terminate(f.i3); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		node cloud.NodeName
		want cloud.InstanceID
		kind cloud.Kind
	}{
		{node: "n1", want: f.i1},
		{node: "n3", want: f.i3}, // terminated: still resolves
		{node: "n9", kind: cloud.KindNotFound},
	}
	for _, tt := range tests {
		t.Run(string(tt.node), func(t *testing.T) {
			got, err := f.c.InstanceID(context.Background(), tt.node)
			checkErr(t, err, tt.kind)
			if tt.kind != cloud.KindNone {
				checkErr(t, err, tt.kind, string(tt.node))
			}
			if got != tt.want {
				t.Errorf("InstanceID(%s) = %q, want %q", tt.node, got, tt.want)
			}
		})
	}
}

func TestCreateVolumeKeepsMode(t *testing.T) {
	f := newFixture(t, Config{})
	f.c.CreateVolume("excl", cloud.MultiNode) // ignored
	f.attach(t, "excl", f.i1)
	_, err := f.c.Attach(context.Background(), "excl", f.i2)
	checkErr(t, err, cloud.KindAttachedElsewhere)
}

func TestTerminateAndStart(t *testing.T) {
	f := newFixture(t, Config{})
	var seen []Change
	f.c.Observe(func(ch Change) { seen = append(seen, ch) })
	f.c.CreateVolume("other", cloud.Exclusive)
	f.attach(t, "excl", f.i1)
	f.attach(t, "multi", f.i1)
	f.attach(t, "multi", f.i2)
	f.attach(t, "other", f.i2)
	seen = nil

	if err := f.c.Terminate(f.i1); err != nil {
		t.Fatal(err)
	}
	if got, want := f.c.Attachments(), attachments("multi", string(f.i2), "other", string(f.i2)); !reflect.DeepEqual(got, want) {
		t.Errorf("after terminate: %v, want %v", got, want)
	}
	now := f.clock.Now()
	want := []Change{
		{Time: now, Volume: "excl", Instance: f.i1, Node: "n1", Mode: cloud.Exclusive, Reason: "terminate"},
		{Time: now, Volume: "multi", Instance: f.i1, Node: "n1", Mode: cloud.MultiNode, Reason: "terminate"},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("observed %+v, want %+v", seen, want)
	}
	if f.c.Running(f.i1) {
		t.Error("terminated instance still running")
	}
	if c := f.c.Calls(); c.DetachNew != 0 {
		t.Errorf("DetachNew = %d after terminate, want 0", c.DetachNew)
	}
	_, err := f.c.Attach(context.Background(), "excl", f.i1)
	checkErr(t, err, cloud.KindRetryable, "instance not running", string(f.i1))

	if err := f.c.Start(f.i1); err != nil {
		t.Fatal(err)
	}
	if id, _ := f.c.InstanceOf("n1"); id != f.i1 || !f.c.Running(f.i1) {
		t.Errorf("after start: InstanceOf = %s, running %v", id, f.c.Running(f.i1))
	}
	vols, err := f.c.InstanceVolumes(context.Background(), []cloud.InstanceID{f.i1})
	if err != nil || len(vols[f.i1]) != 0 {
		t.Errorf("started instance volumes = %v, %v; want none", vols, err)
	}
	f.attach(t, "excl", f.i1)
}

func TestAdminNotFound(t *testing.T) {
	c := New(Config{})
	tests := map[string]error{
		"terminate": c.Terminate("i-x"),
		"start":     c.Start("i-x"),
		"limit":     c.SetAttachLimit("i-x", 3),
	}
	for name, err := range tests {
		t.Run(name, func(t *testing.T) { checkErr(t, err, cloud.KindNotFound, "i-x") })
	}
}

func TestAttachmentsSnapshot(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "multi", f.i3)
	f.attach(t, "multi", f.i1)
	f.attach(t, "multi", f.i2)
	got := f.c.Attachments()
	want := []cloud.InstanceID{f.i1, f.i2, f.i3}
	if !slices.Equal(got["multi"], want) || len(got) != 1 {
		t.Fatalf("Attachments = %v, want multi: %v", got, want)
	}
	got["multi"][0] = "mutated"
	if again := f.c.Attachments(); !maps.EqualFunc(again, map[cloud.VolumeID][]cloud.InstanceID{"multi": want}, slices.Equal) {
		t.Errorf("snapshot aliasing: %v", again)
	}
}
