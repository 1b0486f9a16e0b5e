package sim

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

func TestVolumesAreAttached(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "excl", f.i1)
	f.attach(t, "multi", f.i1)
	f.attach(t, "multi", f.i2)
	f.attach(t, "multi", f.i3)
	mustNil(t, f.c.Terminate(f.i3))
	query := map[cloud.InstanceID][]cloud.VolumeID{
		f.i1:     {"excl", "multi", "nope"},
		f.i2:     {"excl", "multi"},
		f.i3:     {"multi"}, // stopped
		"i-nope": {"excl"},  // unknown
	}
	got, err := f.c.VolumesAreAttached(context.Background(), query)
	mustNil(t, err)
	want := map[cloud.InstanceID]map[cloud.VolumeID]bool{
		f.i1:     {"excl": true, "multi": true, "nope": false},
		f.i2:     {"excl": false, "multi": true},
		f.i3:     {"multi": false},
		"i-nope": {"excl": false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if n := f.c.Calls().Calls[MethodVolumesAreAttached]; n != 1 {
		t.Errorf("%d calls counted for one query of 4 instances", n)
	}
}

func TestInstanceVolumes(t *testing.T) {
	f := newFixture(t, Config{})
	d1 := f.attach(t, "excl", f.i1)
	d2 := f.attach(t, "multi", f.i1)
	d3 := f.attach(t, "multi", f.i2)
	f.attach(t, "multi", f.i3)
	mustNil(t, f.c.Terminate(f.i3))
	got, err := f.c.InstanceVolumes(context.Background(), []cloud.InstanceID{f.i1, f.i2, f.i3, "i-nope"})
	mustNil(t, err)
	want := map[cloud.InstanceID]map[cloud.VolumeID]string{
		f.i1: {"excl": d1, "multi": d2},
		f.i2: {"multi": d3},
		f.i3: {}, // stopped: nothing attached
		// "i-nope" is unknown: absent
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	got[f.i1]["excl"] = "mutated"
	if again, _ := f.c.InstanceVolumes(context.Background(), []cloud.InstanceID{f.i1}); again[f.i1]["excl"] != d1 {
		t.Error("InstanceVolumes result aliases the cloud's state")
	}
	if n := f.c.Calls().Calls[MethodInstanceVolumes]; n != 2 {
		t.Errorf("%d calls counted, want 2", n)
	}
}

func TestBatchLimit(t *testing.T) {
	const batch = 3
	ids := func(n int) []cloud.InstanceID {
		out := make([]cloud.InstanceID, n)
		for i := range out {
			out[i] = cloud.InstanceID(fmt.Sprintf("i-%d", i))
		}
		return out
	}
	query := func(n int) map[cloud.InstanceID][]cloud.VolumeID {
		q := make(map[cloud.InstanceID][]cloud.VolumeID)
		for _, id := range ids(n) {
			q[id] = []cloud.VolumeID{"v"}
		}
		return q
	}
	c := New(Config{BatchSize: batch})
	if c.BatchSize() != batch {
		t.Fatalf("BatchSize = %d", c.BatchSize())
	}
	ctx := context.Background()
	for _, n := range []int{0, 1, batch, batch + 1, 10} {
		kind := cloud.KindNone
		if n > batch {
			kind = cloud.KindTerminal
		}
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			res, err := c.VolumesAreAttached(ctx, query(n))
			checkErr(t, err, kind)
			if kind != cloud.KindNone {
				checkErr(t, err, kind, string(MethodVolumesAreAttached), "batch size")
			} else if len(res) != n {
				t.Errorf("%d results for %d instances", len(res), n)
			}
			vols, err := c.InstanceVolumes(ctx, ids(n))
			checkErr(t, err, kind)
			if kind != cloud.KindNone {
				checkErr(t, err, kind, string(MethodInstanceVolumes), "batch size")
			} else if len(vols) != 0 {
				t.Errorf("%d results for %d unknown instances, want none", len(vols), n)
			}
		})
	}
	cs := c.Calls()
	if cs.Errors[MethodVolumesAreAttached] != 2 || cs.Errors[MethodInstanceVolumes] != 2 {
		t.Errorf("errors %v, want 2 per method", cs.Errors)
	}
}
