package volume

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives one machine with a virtual clock and renders effects as
// short strings, so tests read like the protocol.
type harness struct {
	t   *testing.T
	v   *Volume
	now time.Time
	ops map[NodeName]uint64 // last op started per node
}

func newHarness(t *testing.T, cfg Config) *harness {
	return &harness{t: t, v: New("vol-1", cfg, 1000), now: t0, ops: map[NodeName]uint64{}}
}

func (h *harness) advance(d time.Duration) { h.now = h.now.Add(d) }

func (h *harness) step(ev Event) []string {
	h.t.Helper()
	var out []string
	for _, e := range h.v.Step(h.now, ev) {
		out = append(out, h.render(e))
	}
	return out
}

// expect steps ev and fails unless the rendered effects equal want.
func (h *harness) expect(ev Event, want ...string) {
	h.t.Helper()
	got := h.step(ev)
	if !slices.Equal(got, want) {
		h.t.Fatalf("at +%s after %T%+v:\n got  %q\n want %q", h.now.Sub(t0), ev, ev, got, want)
	}
}

func (h *harness) render(e Effect) string {
	switch e := e.(type) {
	case CallAttach:
		h.ops[e.Node] = e.Op
		return "attach " + string(e.Node)
	case PrepareDetach:
		h.ops[e.Node] = e.Op
		return "prepare " + string(e.Node)
	case CallDetach:
		if e.Force != "" {
			return fmt.Sprintf("detach %s force=%s", e.Node, e.Force)
		}
		return "detach " + string(e.Node)
	case ReportAttached:
		return fmt.Sprintf("report-attached %s %s", e.Node, e.DevicePath)
	case ReportDetached:
		return "report-detached " + string(e.Node)
	case VerifyNode:
		return "verify " + string(e.Node)
	case Record:
		return fmt.Sprintf("event %s %s", e.Type, e.Node)
	case WakeAt:
		return fmt.Sprintf("wake +%s", e.At.Sub(h.now))
	}
	h.t.Fatalf("unknown effect %T", e)
	return ""
}

// Shorthands for results of the operation last started on a node.
func (h *harness) attached(n NodeName) AttachDone {
	return AttachDone{Node: n, Op: h.ops[n], DevicePath: "/dev/x" + string(n)}
}
func (h *harness) attachFailed(n NodeName, k cloud.Kind) AttachDone {
	return AttachDone{Node: n, Op: h.ops[n], Err: k, Msg: "boom"}
}
func (h *harness) prepared(n NodeName) DetachPrepared {
	return DetachPrepared{Node: n, Op: h.ops[n], OK: true}
}
func (h *harness) detached(n NodeName) DetachDone { return DetachDone{Node: n, Op: h.ops[n]} }

func (h *harness) state(n NodeName) string {
	a, ok := h.v.Status().Attachments[n]
	if !ok {
		return "none"
	}
	return a.State.String()
}

func (h *harness) wantState(n NodeName, want string) {
	h.t.Helper()
	if got := h.state(n); got != want {
		h.t.Fatalf("attachment on %s: got %s, want %s", n, got, want)
	}
}

func nodes(s string) []NodeName {
	var out []NodeName
	for _, f := range strings.Fields(s) {
		out = append(out, NodeName(f))
	}
	return out
}

func restored(mode cloud.AccessMode, desired string) Restored {
	return Restored{Mode: mode, Desired: nodes(desired), Truth: map[NodeName]bool{}}
}

func ready(inUse bool) NodeInfo { return NodeInfo{InUse: inUse, Ready: true} }

// attachedOn brings the machine to "attached on these nodes, all desired".
func (h *harness) attachedOn(mode cloud.AccessMode, desired string) {
	h.t.Helper()
	h.step(restored(mode, desired))
	for _, n := range nodes(desired) {
		if h.state(n) == "Attaching" {
			h.step(h.attached(n))
		}
		h.wantState(n, "Attached")
	}
}
