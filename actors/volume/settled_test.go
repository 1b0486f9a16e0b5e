package volume

import (
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// Settled holds only when nothing is pending, and then Step asks for no
// wake-up: the shell may drop its timer.
func TestSettled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Backoff.Jitter = 0
	h := newHarness(t, cfg)
	check := func(what string, want bool) {
		t.Helper()
		if got := h.v.Settled(); got != want {
			t.Fatalf("%s: Settled = %v, want %v (n1 %s, n2 %s)", what, got, want, h.state("n1"), h.state("n2"))
		}
	}
	check("before the restore", false)
	h.step(restored(cloud.MultiNode, "n1 n2"))
	check("attaching", false)
	h.step(h.attached("n1"))
	h.step(h.attached("n2"))
	check("attached, not yet recorded by the nodes", false)
	h.step(AttachRecorded{Node: "n1"})
	check("one node still to record", false)
	h.expect(AttachRecorded{Node: "n2"}) // and no wake-up asked
	check("attached and recorded on every desired node", true)
	h.expect(Tick{})
	check("a tick changes nothing", true)

	h.step(DesiredChanged{Mode: cloud.MultiNode, Desired: nodes("n1 n2 n3")})
	check("a third node desired", false)
	h.step(h.attachFailed("n3", cloud.KindRetryable))
	check("its attach failed: a retry is due", false)
	h.advance(time.Second)
	h.step(Tick{})
	h.step(h.attached("n3"))
	h.step(AttachRecorded{Node: "n3"})
	check("the retry attached and was recorded", true)

	h.step(DesiredChanged{Mode: cloud.MultiNode, Desired: nodes("n1 n2")})
	check("n3 no longer desired: a detach is due", false)
	h.step(NodeChanged{Node: "n3", Info: ready(false)})
	h.step(h.prepared("n3"))
	check("detaching n3", false)
	h.step(h.detached("n3"))
	check("n3 detached", true)

	h.step(DesiredChanged{Mode: cloud.MultiNode})
	check("wanted nowhere, still attached", false)
}
