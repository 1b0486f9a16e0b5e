package mount

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// fakeMounter fails every operation whose name is in fail.
type fakeMounter struct {
	fail  map[string]bool
	calls []string
}

var errFake = errors.New("fake mount failure")

func (f *fakeMounter) do(op string) error {
	f.calls = append(f.calls, op)
	if f.fail[op] {
		return errFake
	}
	return nil
}

func (f *fakeMounter) Stage(_, _ string) error           { return f.do("stage") }
func (f *fakeMounter) Unstage(string) error              { return f.do("unstage") }
func (f *fakeMounter) Publish(_, _ string, _ bool) error { return f.do("publish") }
func (f *fakeMounter) Unpublish(string) error            { return f.do("unpublish") }
func (f *fakeMounter) Name() string                      { return "fake" }
func (f *fakeMounter) Inspect(string) (State, string, error) {
	f.calls = append(f.calls, "inspect")
	return Mounted, "/src", nil
}

func TestObservedReportsOperations(t *testing.T) {
	fake := &fakeMounter{fail: map[string]bool{"publish": true}}
	var seen []string
	mt := Observed(fake, func(op string, err error, d time.Duration) {
		if d < 0 {
			t.Errorf("%s took %v", op, d)
		}
		seen = append(seen, fmt.Sprintf("%s:%v", op, err != nil))
	})
	if err := mt.Stage("/src", "/root/staged"); err != nil {
		t.Errorf("Stage: %v", err)
	}
	if err := mt.Publish("/root/staged", "/root/pub", true); !errors.Is(err, errFake) {
		t.Errorf("Publish: %v, want the fake's error", err)
	}
	if err := mt.Unpublish("/root/pub"); err != nil {
		t.Errorf("Unpublish: %v", err)
	}
	if err := mt.Unstage("/root/staged"); err != nil {
		t.Errorf("Unstage: %v", err)
	}
	state, src, err := mt.Inspect("/root/staged")
	if state != Mounted || src != "/src" || err != nil {
		t.Errorf("Inspect = %v %q %v, want mounted /src nil", state, src, err)
	}
	if got := mt.Name(); got != "fake" {
		t.Errorf("Name = %q, want fake", got)
	}
	if want := []string{"stage", "publish", "unpublish", "unstage", "inspect"}; fmt.Sprint(fake.calls) != fmt.Sprint(want) {
		t.Errorf("calls = %v, want %v", fake.calls, want)
	}
	if want := []string{"stage:false", "publish:true", "unpublish:false", "unstage:false"}; fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("reported %v, want %v (Inspect unreported)", seen, want)
	}
	if got := Observed(fake, nil); got != Mounter(fake) {
		t.Errorf("Observed with no record wrapped the mounter")
	}
}
