package chaos

import (
	"strings"
	"testing"
	"time"
)

// A checker counts only if it can fail: each test-only hook breaks one
// rule inside tether, and a short chaos run must report that rule, naming
// a volume and a node, with the volume's history (and, where a rule has
// several checks, the one the break is for: detail).
func TestBrokenRulesAreCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs seconds of chaos per rule")
	}
	detail := map[string]string{"I5-device": "not the volume's current device"}
	for _, inv := range Breaks {
		if inv == "I5-device" {
			continue // a run seldom reuses a device path so: TestStaleDeviceCacheCaughtByI5 scripts it
		}
		t.Run(inv, func(t *testing.T) {
			rep := run(t, Config{Seed: 3, Duration: 2 * time.Second, Volumes: 8, Nodes: 3, Break: inv, Converge: 3 * time.Second})
			for _, v := range rep.Found {
				if v.Invariant == inv[:2] && v.Volume != "" && v.Node != "" && len(v.History) > 0 && strings.Contains(v.Detail, detail[inv]) {
					t.Logf("caught: %s", v)
					return
				}
			}
			t.Fatalf("breaking %s was not reported (%d mount calls); found:\n%s", inv, rep.MountCalls, details(rep))
		})
	}
}
