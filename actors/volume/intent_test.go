package volume

import (
	"fmt"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// kinds lists the effects' types and targets, for compact assertions.
func kinds(effs []Effect) []string {
	var out []string
	for _, e := range effs {
		switch f := e.(type) {
		case CallAttach:
			out = append(out, "attach "+string(f.Node))
		case PrepareDetach:
			out = append(out, "prepare "+string(f.Node))
		case ReportDetached:
			out = append(out, "unlist "+string(f.Node))
		case ReportAttached:
			out = append(out, "list "+string(f.Node))
		}
	}
	return out
}

func has(effs []Effect, what string) bool {
	for _, k := range kinds(effs) {
		if k == what {
			return true
		}
	}
	return false
}

// An earlier incarnation's attach to n1 may land (or may have landed with
// its reply lost): the rebuilt exclusive volume attaches nowhere else until
// the cloud's truth, asked after that attach's deadline, says where it is.
func TestRestoredIntentsHoldI1(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	attachN1 := func(deadline time.Time) []InFlight {
		return []InFlight{{Node: "n1", Deadline: deadline}}
	}
	for _, tc := range []struct {
		name     string
		restored Restored
		first    string // an effect the restore must give ("" none)
		never    string // an effect the restore must not give
	}{
		{"in flight, verify says detached", Restored{InFlight: attachN1(t0.Add(time.Minute)), Truth: map[NodeName]bool{"n1": false, "n2": false}, AsOf: t0},
			"", "attach n2"},
		{"expired, verify failed", Restored{InFlight: attachN1(t0.Add(-time.Minute)), AsOf: t0.Add(-time.Second)},
			"prepare n1", "attach n2"},
		{"expired, verify asked before the deadline", Restored{InFlight: attachN1(t0.Add(-time.Second)), Truth: map[NodeName]bool{"n1": false, "n2": false}, AsOf: t0.Add(-time.Minute)},
			"prepare n1", "attach n2"},
		{"settled by truth asked after the deadline", Restored{InFlight: attachN1(t0.Add(-time.Minute)), Truth: map[NodeName]bool{"n1": false, "n2": false}, AsOf: t0.Add(-time.Second)},
			"attach n2", "prepare n1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := New("v", cfg, 0)
			r := tc.restored
			r.Mode, r.Desired = cloud.Exclusive, []NodeName{"n2"}
			effs := v.Step(t0, r)
			if tc.first != "" && !has(effs, tc.first) {
				t.Fatalf("restore gave %v, want %q", kinds(effs), tc.first)
			}
			if has(effs, tc.never) {
				t.Fatalf("restore gave %v: %q breaks I1 or is needless", kinds(effs), tc.never)
			}
			// Until the fence (if any) passes, n2 stays out of reach.
			for now := t0; now.Before(t0.Add(time.Minute)); now = now.Add(10 * time.Second) {
				if effs := v.Step(now, Tick{}); has(effs, "attach n2") {
					st := v.Status()
					if a, ok := st.Attachments["n1"]; ok {
						t.Fatalf("at %s attach n2 while n1 is %v", now.Sub(t0), a.State)
					}
				}
			}
		})
	}
}

func TestRestoredIntentFenceLifts(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	v := New("v", DefaultConfig(), 0)
	deadline := t0.Add(30 * time.Second)
	effs := v.Step(t0, Restored{Mode: cloud.Exclusive, Desired: []NodeName{"n2"},
		InFlight: []InFlight{{Node: "n1", Deadline: deadline}}, Truth: map[NodeName]bool{"n1": false, "n2": false}, AsOf: t0})
	if len(kinds(effs)) != 1 || !has(effs, "unlist n1") {
		t.Fatalf("restore gave %v, want only the unlisting of n1", kinds(effs))
	}
	if effs := v.Step(deadline.Add(-time.Millisecond), Tick{}); len(kinds(effs)) != 0 {
		t.Fatalf("before the deadline: %v", kinds(effs))
	}
	effs = v.Step(deadline, Tick{})
	if fmt.Sprint(kinds(effs)) != "[prepare n1]" {
		t.Fatalf("at the deadline: %v, want the (idempotent) detach of n1 first", kinds(effs))
	}
}
