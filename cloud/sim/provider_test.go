package sim

import (
	"context"
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

// attachCase is one Attach on a fresh fixture after setup: the error kind
// it must return, words its message must contain and the attachments left.
type attachCase struct {
	name  string
	setup func(t *testing.T, f *fixture)
	vol   cloud.VolumeID
	inst  func(f *fixture) cloud.InstanceID
	kind  cloud.Kind
	parts func(f *fixture) []string
	want  func(f *fixture) map[cloud.VolumeID][]cloud.InstanceID
}

func attachCases() []attachCase {
	return []attachCase{{
		name: "exclusive on free volume",
		vol:  "excl", inst: first,
		want: func(f *fixture) map[cloud.VolumeID][]cloud.InstanceID { return attachments("excl", string(f.i1)) },
	}, {
		name: "unknown volume",
		vol:  "nope", inst: first, kind: cloud.KindNotFound,
		parts: func(f *fixture) []string { return []string{"nope"} },
	}, {
		name: "unknown instance",
		vol:  "excl", inst: func(*fixture) cloud.InstanceID { return "i-nope" }, kind: cloud.KindNotFound,
		parts: func(f *fixture) []string { return []string{"i-nope"} },
	}, {
		name:  "stopped instance",
		setup: func(t *testing.T, f *fixture) { mustNil(t, f.c.Terminate(f.i1)) },
		vol:   "excl", inst: first, kind: cloud.KindRetryable,
		parts: func(f *fixture) []string { return []string{"instance not running", string(f.i1), "excl"} },
	}, {
		name:  "exclusive attached elsewhere",
		setup: func(t *testing.T, f *fixture) { f.attach(t, "excl", f.i2) },
		vol:   "excl", inst: first, kind: cloud.KindAttachedElsewhere,
		parts: func(f *fixture) []string { return []string{"excl", string(f.i1), string(f.i2)} },
		want:  func(f *fixture) map[cloud.VolumeID][]cloud.InstanceID { return attachments("excl", string(f.i2)) },
	}, {
		name:  "limit reached",
		setup: func(t *testing.T, f *fixture) { mustNil(t, f.c.SetAttachLimit(f.i1, 1)); f.attach(t, "multi", f.i1) },
		vol:   "excl", inst: first, kind: cloud.KindLimitReached,
		parts: func(f *fixture) []string { return []string{"excl", string(f.i1)} },
		want:  func(f *fixture) map[cloud.VolumeID][]cloud.InstanceID { return attachments("multi", string(f.i1)) },
	}, {
		name:  "idempotent repeat at the limit",
		setup: func(t *testing.T, f *fixture) { mustNil(t, f.c.SetAttachLimit(f.i1, 1)); f.attach(t, "excl", f.i1) },
		vol:   "excl", inst: first,
		want: func(f *fixture) map[cloud.VolumeID][]cloud.InstanceID { return attachments("excl", string(f.i1)) },
	}}
}

func TestAttachRules(t *testing.T) {
	for _, tt := range attachCases() {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			if tt.setup != nil {
				tt.setup(t, f)
			}
			dev, err := f.c.Attach(context.Background(), tt.vol, tt.inst(f))
			var parts []string
			if tt.parts != nil {
				parts = tt.parts(f)
			}
			checkErr(t, err, tt.kind, parts...)
			if (err == nil) != (dev != "") {
				t.Errorf("device %q with error %v", dev, err)
			}
			want := map[cloud.VolumeID][]cloud.InstanceID{}
			if tt.want != nil {
				want = tt.want(f)
			}
			if got := f.c.Attachments(); !reflect.DeepEqual(got, want) {
				t.Errorf("attachments %v, want %v", got, want)
			}
		})
	}
}

func first(f *fixture) cloud.InstanceID { return f.i1 }

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestMultiNodeOnThreeInstances(t *testing.T) {
	f := newFixture(t, Config{})
	for _, inst := range []cloud.InstanceID{f.i1, f.i2, f.i3} {
		f.attach(t, "multi", inst)
	}
	want := attachments("multi", string(f.i1), "multi", string(f.i2), "multi", string(f.i3))
	if got := f.c.Attachments(); !reflect.DeepEqual(got, want) {
		t.Errorf("attachments %v, want %v", got, want)
	}
	mustNil(t, f.c.Detach(context.Background(), "multi", f.i2))
	want = attachments("multi", string(f.i1), "multi", string(f.i3))
	if got := f.c.Attachments(); !reflect.DeepEqual(got, want) {
		t.Errorf("after detach %v, want %v", got, want)
	}
}

func TestLimitAndDevicePaths(t *testing.T) {
	f := newFixture(t, Config{AttachLimit: 3})
	ctx := context.Background()
	for _, v := range []cloud.VolumeID{"a", "b", "c", "d", "e"} {
		f.c.CreateVolume(v, cloud.Exclusive)
	}
	devs := []string{f.attach(t, "a", f.i1), f.attach(t, "b", f.i1), f.attach(t, "c", f.i1)}
	if want := []string{"/dev/xvdba", "/dev/xvdbb", "/dev/xvdbc"}; !reflect.DeepEqual(devs, want) {
		t.Errorf("devices %v, want %v", devs, want)
	}
	_, err := f.c.Attach(ctx, "d", f.i1)
	checkErr(t, err, cloud.KindLimitReached, "d", string(f.i1))
	if dev := f.attach(t, "e", f.i2); dev != "/dev/xvdba" {
		t.Errorf("first device of another instance = %s", dev)
	}
	mustNil(t, f.c.Detach(ctx, "b", f.i1))
	if dev := f.attach(t, "d", f.i1); dev != "/dev/xvdbb" {
		t.Errorf("device after detach = %s, want reused /dev/xvdbb", dev)
	}
	mustNil(t, f.c.SetAttachLimit(f.i1, 5))
	if dev := f.attach(t, "b", f.i1); dev != "/dev/xvdbd" {
		t.Errorf("device after raising the limit = %s, want /dev/xvdbd", dev)
	}
}

func TestDeviceNamesUnique(t *testing.T) {
	seen := make(map[string]int)
	for i := range 2000 {
		name := deviceName(i)
		if j, dup := seen[name]; dup {
			t.Fatalf("deviceName(%d) = deviceName(%d) = %s", i, j, name)
		}
		seen[name] = i
	}
	for i, want := range map[int]string{0: "/dev/xvdba", 25: "/dev/xvdbz", 26: "/dev/xvdca", 649: "/dev/xvdzz", 650: "/dev/xvdaaa"} {
		if got := deviceName(i); got != want {
			t.Errorf("deviceName(%d) = %s, want %s", i, got, want)
		}
	}
}

func TestDetachRules(t *testing.T) {
	tests := []struct {
		name      string
		vol       cloud.VolumeID
		inst      cloud.InstanceID // "" means f.i1
		kind      cloud.Kind
		detachNew int
		left      int // attachments left
	}{
		{name: "attached", vol: "excl", detachNew: 1, left: 1},
		{name: "not attached here", vol: "multi", left: 2},
		{name: "unknown volume", vol: "nope", kind: cloud.KindNotFound, left: 2},
		{name: "unknown instance", vol: "excl", inst: "i-nope", kind: cloud.KindNotFound, left: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, Config{})
			f.attach(t, "excl", f.i1)
			f.attach(t, "multi", f.i2)
			inst := tt.inst
			if inst == "" {
				inst = f.i1
			}
			err := f.c.Detach(context.Background(), tt.vol, inst)
			if tt.kind != cloud.KindNone {
				checkErr(t, err, tt.kind, string(tt.vol), string(inst))
			} else {
				checkErr(t, err, tt.kind)
			}
			if got := f.c.Calls().DetachNew; got != tt.detachNew {
				t.Errorf("DetachNew = %d, want %d", got, tt.detachNew)
			}
			if got := len(f.c.Attachments()); got != tt.left {
				t.Errorf("%d volumes attached, want %d", got, tt.left)
			}
		})
	}
}

func TestIdempotentCounters(t *testing.T) {
	f := newFixture(t, Config{})
	ctx := context.Background()
	dev := f.attach(t, "excl", f.i1)
	if again := f.attach(t, "excl", f.i1); again != dev {
		t.Errorf("repeat attach device %s, want %s", again, dev)
	}
	mustNil(t, f.c.Detach(ctx, "excl", f.i1))
	mustNil(t, f.c.Detach(ctx, "excl", f.i1))
	c := f.c.Calls()
	if c.AttachNew != 1 || c.DetachNew != 1 {
		t.Errorf("AttachNew, DetachNew = %d, %d; want 1, 1", c.AttachNew, c.DetachNew)
	}
	if c.Calls[MethodAttach] != 2 || c.Calls[MethodDetach] != 2 || c.Errors[MethodAttach] != 0 {
		t.Errorf("counters %+v", c)
	}
}

// TestInstanceIDs: one counted call resolves a batch of nodes; nodes no
// instance backs are absent; more than BatchSize is refused; injected
// faults apply to it as to any call.
func TestInstanceIDs(t *testing.T) {
	f := newFixture(t, Config{BatchSize: 3})
	ctx := context.Background()
	if err := f.c.Delete(f.i3); err != nil {
		t.Fatal(err)
	}
	got, err := f.c.InstanceIDs(ctx, []cloud.NodeName{"n1", "n2", "n3"})
	want := map[cloud.NodeName]cloud.InstanceID{"n1": f.i1, "n2": f.i2}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("InstanceIDs = %v, %v; want %v", got, err, want)
	}
	if n := f.c.Calls().Calls; n[MethodInstanceIDs] != 1 || n[MethodInstanceID] != 0 {
		t.Fatalf("calls %v, want one instance_ids and no instance_id", n)
	}
	_, err = f.c.InstanceIDs(ctx, []cloud.NodeName{"n1", "n2", "n3", "n4"})
	checkErr(t, err, cloud.KindTerminal, "batch size")
	f.c.FailNext(MethodInstanceIDs, 1, cloud.KindRetryable)
	_, err = f.c.InstanceIDs(ctx, []cloud.NodeName{"n1"})
	checkErr(t, err, cloud.KindRetryable, string(MethodInstanceIDs))
}
