package mount

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/cloud/testkit"
)

// hangInspect blocks Inspect of one target until released.
type hangInspect struct {
	Mounter
	target  string
	release chan struct{}
	mu      sync.Mutex
	running int // Inspect calls of target not yet returned
}

func (h *hangInspect) Inspect(target string) (State, string, error) {
	if target == h.target {
		h.mu.Lock()
		h.running++
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			h.running--
			h.mu.Unlock()
		}()
		<-h.release
	}
	return h.Mounter.Inspect(target)
}

func (h *hangInspect) stillRunning() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.running
}

// A target whose Inspect hangs is reported Unknown when the context ends,
// without delaying the others; the abandoned call ends once released.
func TestScanContextHungInspect(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, hung := e.globalMount(t, "vol-a"), e.globalMount(t, "vol-b")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Stage(e.src2, hung))
		h := &hangInspect{Mounter: e.m, target: hung, release: make(chan struct{})}
		var once sync.Once
		release := func() { once.Do(func() { close(h.release) }) }
		t.Cleanup(release)

		// Long enough for the answering Inspect on a loaded machine (50 ms
		// was not, in CI), short enough to keep the test quick: the hung
		// one never answers, whatever the deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		found, err := ScanContext(ctx, e.l, h)
		must(t, err)
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("ScanContext took %s with a 2s deadline", took)
		}
		if len(found.Entries) != 2 {
			t.Fatalf("found %+v, want 2 entries", found.Entries)
		}
		if got := found.Entries[0]; got.Path != gm || got.State != Mounted || !samePath(got.Source, e.src) {
			t.Errorf("answered entry = %+v, want %s mounted from %s", got, gm, e.src)
		}
		if got := found.Entries[1]; got.Path != hung || got.State != Unknown || got.Source != "" {
			t.Errorf("hung entry = %+v, want %s unknown", got, hung)
		}
		if h.stillRunning() != 1 {
			t.Fatalf("%d hung Inspect calls running, want 1", h.stillRunning())
		}
		release()
		testkit.Eventually(t, 5*time.Second, func() bool { return h.stillRunning() == 0 }, "the released Inspect returned")
	})
}

// With a deadline that is not reached, ScanContext answers as Scan does.
func TestScanContextSameAsScan(t *testing.T) {
	forEachMounter(t, func(t *testing.T, e *env) {
		gm, pv := e.globalMount(t, "vol-a"), e.podVolume(t, "uid-1", "vol-a")
		must(t, e.m.Stage(e.src, gm))
		must(t, e.m.Publish(gm, pv, false))
		mkdir(t, e.globalMount(t, "vol-b"))
		want, err := Scan(e.l, e.m)
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		got, err := ScanContext(ctx, e.l, e.m)
		must(t, err)
		if len(got.Entries) != 3 || len(got.Entries) != len(want.Entries) {
			t.Fatalf("ScanContext = %+v\nScan = %+v", got.Entries, want.Entries)
		}
		for i := range got.Entries {
			if got.Entries[i] != want.Entries[i] {
				t.Errorf("entry %d: ScanContext %+v, Scan %+v", i, got.Entries[i], want.Entries[i])
			}
		}
	})
}
