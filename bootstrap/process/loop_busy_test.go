package process

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/mount"
)

// failureRE reads the failure number and the backoff of a FailedUnmount
// event ("... (failure 2; no retry for 1s)").
var failureRE = regexp.MustCompile(`\(failure (\d+); no retry for ([^)]+)\)`)

// A workload deleted while a process still holds a file open through its
// mount, with the real block mounter: the unmount is refused as busy
// (mount.ErrBusy), never forced nor detached lazily; the agent reports
// each refusal as a FailedUnmount event and retries with a growing
// backoff; the mount stays, and so does the attachment (the volume stays
// in use: no detach under a mount). Once the process lets go, the next
// retry unmounts, and the volume is detached.
func TestLoopBusyUnmountRetriedWithBackoff(t *testing.T) {
	e := startLoop(t, loopConfig(t, newLoopDir(t)))
	applyOn(t, e, "n1")
	p := waitServed(t, e, "n1", uid, vol)
	writeChecksummed(t, p, 1)
	hold := holdOpen(t, p+"/file-000")

	var mu sync.Mutex
	var failed []events.Event
	e.Events.Subscribe(func(ev events.Event) {
		if ev.Type == "FailedUnmount" && ev.Node == "n1" {
			mu.Lock()
			failed = append(failed, ev)
			mu.Unlock()
		}
	})
	seen := func() []events.Event {
		mu.Lock()
		defer mu.Unlock()
		return append([]events.Event(nil), failed...)
	}
	if err := e.Ctl().DeleteWorkload(uid); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 30*time.Second, func() bool {
		if !mountedOn(e, "n1", p) || !attachedOnlyTo(e, vol, "n1") {
			t.Fatalf("with a file held open through it, the mount or the attachment went: mounted %v, attachments %v",
				mountedOn(e, "n1", p), e.Account.Attachments())
		}
		return len(seen()) >= 3
	}, "three refused unmounts")
	var last time.Duration
	for i, ev := range seen()[:3] {
		m := failureRE.FindStringSubmatch(ev.Message)
		if !strings.Contains(ev.Message, mount.ErrBusy.Error()) || !ev.Warning || m == nil {
			t.Fatalf("event %d: %q (warning %v); want a warning saying the unmount was busy, with its backoff", i+1, ev.Message, ev.Warning)
		}
		wait, err := time.ParseDuration(m[2])
		if n, _ := strconv.Atoi(m[1]); n != i+1 || err != nil || wait <= last {
			t.Errorf("event %d: failure %s, backoff %s after %s; want failure %d and a longer backoff", i+1, m[1], m[2], last, i+1)
		}
		last = wait
		t.Logf("event %d: %s", i+1, ev.Message)
	}

	hold()
	testkit.Eventually(t, 30*time.Second, func() bool {
		_, attached := e.Account.Attachments()[vol]
		return !mountedOn(e, "n1", p) && !exists(p) && !attached
	}, "unmounted and detached once the file is closed")
}
