package main

import (
	"strings"
	"testing"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/cloud/limit"
)

// sharedControllerFlags are the flags tether up and tether controller
// share (controllerFlags).
var sharedControllerFlags = []string{"sync-period", "cloud-timeout", "max-wait-for-unmount", "disable-force-detach", "cloud-qps", "cloud-burst", "cloud-max-inflight"}

// tether up and tether controller offer the same controller flags, with
// the same defaults, documented the same way.
func TestControllerFlagsShared(t *testing.T) {
	root := newRoot()
	up, _, err := root.Find([]string{"up"})
	if err != nil {
		t.Fatal(err)
	}
	member, _, err := root.Find([]string{"controller"})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range sharedControllerFlags {
		u, m := up.Flags().Lookup(name), member.Flags().Lookup(name)
		if u == nil || m == nil {
			t.Errorf("--%s: tether up has it %v, tether controller %v; want both", name, u != nil, m != nil)
			continue
		}
		if u.DefValue != m.DefValue || u.Usage != m.Usage || m.Hidden {
			t.Errorf("--%s differs: up %q %q, controller %q %q (hidden %v)", name, u.DefValue, u.Usage, m.DefValue, m.Usage, m.Hidden)
		}
	}
	// The defaults are tether up's: a member is bounded toward the cloud
	// as one process is.
	if want := limit.Defaults(); member.Flags().Lookup("cloud-qps").DefValue != "20" || want.QPS != 20 {
		t.Errorf("tether controller's --cloud-qps default = %s, want limit.Defaults' %v", member.Flags().Lookup("cloud-qps").DefValue, want.QPS)
	}
	if d := controller.DefaultConfig().Volume.MaxWaitForUnmount.String(); member.Flags().Lookup("max-wait-for-unmount").DefValue != d {
		t.Errorf("--max-wait-for-unmount default %s, want %s", member.Flags().Lookup("max-wait-for-unmount").DefValue, d)
	}
}

// Both refuse the same bad values the same way, before anything starts
// (exit 2, naming the flag).
func TestControllerFlagsValidatedAlike(t *testing.T) {
	for _, bad := range [][]string{
		{"--cloud-qps", "-1"},
		{"--cloud-burst", "0"},
		{"--cloud-max-inflight", "-3"},
		{"--cloud-timeout", "1ms"},
		{"--max-wait-for-unmount", "-1s"},
		{"--sync-period", "10ms"},
	} {
		for _, cmd := range []string{"up", "controller"} {
			args := append([]string{cmd, "--data-dir", t.TempDir()}, bad...)
			if cmd == "controller" {
				args = append([]string{cmd, "--etcd", "127.0.0.1:1"}, bad...)
			}
			code, out := execute("", args...)
			if code != 2 || !strings.Contains(out, "--"+strings.TrimPrefix(bad[0], "--")+" "+bad[1]) {
				t.Errorf("tether %s %v: exit %d, %q; want 2 naming the flag", cmd, bad, code, out)
			}
		}
	}
}
