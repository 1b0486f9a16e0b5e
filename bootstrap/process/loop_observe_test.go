package process

import (
	"context"
	"errors"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// What the loop cloud does on its own, through the account, is heard as
// the sim tells it: a console detach (ReasonConsole), the attachments of
// a replaced instance (ReasonTerminate), on real loop devices.
func TestLoopAccountObservesConsoleDetachAndReplace(t *testing.T) {
	dir := newLoopDir(t)
	a, err := openLoop(dir, LoopConfig{VolumeSize: 16 << 20})
	if err != nil {
		t.Fatalf("opening the loop cloud: %v (this test needs root and loop devices)", err)
	}
	t.Cleanup(func() {
		if err := errors.Join(a.ReleaseAll(), a.Close()); err != nil {
			t.Errorf("releasing the loop cloud: %v", err)
		}
	})
	if err := errors.Join(a.AddInstances([]cloud.NodeName{"n1"}), a.CreateVolume("v", cloud.Exclusive)); err != nil {
		t.Fatal(err)
	}
	var heard []sim.Change
	a.ObserveSync(func(ch sim.Change) { heard = append(heard, ch) })
	attach := func() cloud.InstanceID {
		inst, _ := a.InstanceOf("n1")
		if _, err := a.Attach(context.Background(), "v", inst); err != nil {
			t.Fatal(err)
		}
		return inst
	}
	first := attach()
	if err := a.ConsoleDetach("v", first); err != nil {
		t.Fatal(err)
	}
	attach()
	if _, err := a.Replace("n1"); err != nil {
		t.Fatal(err)
	}
	want := []struct {
		attached bool
		reason   string
	}{{true, sim.ReasonAttach}, {false, sim.ReasonConsole}, {true, sim.ReasonAttach}, {false, sim.ReasonTerminate}}
	if len(heard) != len(want) {
		t.Fatalf("heard %+v, want %d changes", heard, len(want))
	}
	for i, w := range want {
		if h := heard[i]; h.Volume != "v" || h.Node != "n1" || h.Instance != first || h.Attached != w.attached || h.Reason != w.reason {
			t.Errorf("change %d: %+v, want attached=%v reason %s on %s", i, h, w.attached, w.reason, first)
		}
	}
}
