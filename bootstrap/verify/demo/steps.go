package demo

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/verify/chaos"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/layout"
)

// placement is where the demo's workloads run; everything the demo expects
// (attachments, mounts) follows from it.
type placement map[string]cloud.NodeName

var demoUses = map[string][]cloud.VolumeID{
	"app-1": {"data-1", "shared"},
	"app-2": {"data-2", "shared"},
	"app-3": {"data-3", "shared"},
}

type demoStepDef struct {
	name  string
	do    func() error
	check func() error
}

// script is the demo's steps; they move the placement and the machine that
// is down, which each step's convergence check compares with.
func (d *demo) script(at placement, down *cloud.NodeName) []demoStepDef {
	ctl, e := d.e.Controller, d.e
	inst1, _ := e.Account.InstanceOf("n1")
	var ids map[string]string // n2's mounts on disk before its agent restarts
	return []demoStepDef{
		{"workloads on three nodes: volumes attached and mounted", func() error { return d.applyAll(at) },
			func() error { return d.writeFile("n1", "app-1", "data-1") }},
		{"n1's machine goes down, its instance terminated: the sync finds its volumes gone", func() error {
			*down = "n1"
			if err := chaos.PowerOff(e, d.chk, "n1", "terminate"); err != nil {
				return err
			}
			return e.Account.Terminate(inst1)
		}, nil},
		{"n1's instance started again: volumes attached again, mounts redone", func() error {
			*down = ""
			return chaos.PowerOn(d.e, "n1")
		}, nil},
		{"n2's agent restarted: mounts read back from disk, none redone (same mount identities on disk)", func() error {
			var err error
			if ids, err = chaos.Identities(e.NodeDir("n2"), d.mounter("n2")); err != nil {
				return err
			}
			if err := e.StopAgent("n2"); err != nil {
				return err
			}
			return e.StartAgent("n2")
		}, func() error { return d.sameMounts("n2", ids) }},
		{"app-1 moved to n2: data-1 detached from n1, attached to n2, data intact", func() error {
			at["app-1"] = "n2"
			return ctl.ApplyWorkload(store.Workload{UID: "app-1", Node: "n2", Volumes: d.uses["app-1"]})
		}, func() error { return d.readFile("n2", "app-1", "data-1") }},
		{"everything deleted: unmounted and detached", func() error { return d.deleteAll(at) }, nil},
	}
}

// applyAll creates the volumes in the cloud (on a CSI driver: checks
// that it has them) and applies them and the workloads at their places.
func (d *demo) applyAll(at placement) error {
	ctl := d.e.Controller
	for v, mode := range d.modes {
		if err := d.e.Account.CreateVolume(v, mode); err != nil {
			return err
		}
		if err := ctl.ApplyVolume(store.VolumeSpec{ID: v, Mode: mode}); err != nil {
			return err
		}
	}
	for uid, n := range at {
		if err := ctl.ApplyWorkload(store.Workload{UID: uid, Node: n, Volumes: d.uses[uid]}); err != nil {
			return err
		}
	}
	return nil
}

// deleteAll deletes every workload, then every volume.
func (d *demo) deleteAll(at placement) error {
	ctl := d.e.Controller
	for uid := range at {
		if err := ctl.DeleteWorkload(uid); err != nil {
			return err
		}
	}
	clear(at)
	for v := range d.modes {
		if err := ctl.DeleteVolume(v); err != nil {
			return err
		}
	}
	return nil
}

// spread places the workloads on the nodes in turn (app-1 on n1, app-2
// on n2, ...; all on n1 if it is the only one).
func (d *demo) spread() placement {
	at := placement{}
	for i, uid := range slices.Sorted(maps.Keys(d.uses)) {
		at[uid] = d.e.NodeNames[i%len(d.e.NodeNames)]
	}
	return at
}

// steps runs the script, each step until it converged or timed out: on
// a CSI driver, until the driver's state matches the placement.
func (d *demo) steps() bool {
	at := d.spread()
	down := cloud.NodeName("")
	steps, diff := d.script(at, &down), func() string { return d.diff(at, down) }
	if d.fake != nil {
		steps, diff = d.csiScript(at), func() string { return d.csiDiff(at) }
	}
	for i, s := range steps {
		t0 := time.Now()
		step := Step{Name: s.name}
		err := s.do()
		if err == nil {
			err = d.until(diff)
		}
		if err == nil && s.check != nil {
			err = s.check()
		}
		step.Seconds = time.Since(t0).Seconds()
		step.Converged = err == nil
		mark := "ok"
		if err != nil {
			step.Error, mark = err.Error(), "FAILED: "+err.Error()
		}
		d.rep.Steps = append(d.rep.Steps, step)
		fmt.Fprintf(d.out, "[%d/%d] %-80s %5.2fs %s\n", i+1, len(steps), s.name, step.Seconds, mark)
		if err != nil {
			return false
		}
	}
	return true
}

// until polls diff until it reports nothing, or the step times out.
func (d *demo) until(diff func() string) error {
	deadline := time.Now().Add(d.timeout)
	for {
		msg := diff()
		if msg == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged after %s: %s", d.timeout, msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diff compares the cloud's truth, the node statuses, the agents'
// readiness and the mounts on disk with what the placement calls for. A
// machine that is down has nothing attached and nothing mounted.
func (d *demo) diff(at placement, down cloud.NodeName) string {
	want := map[cloud.VolumeID][]cloud.NodeName{}
	for uid, n := range at {
		for _, v := range d.uses[uid] {
			if n != down && !slices.Contains(want[v], n) {
				want[v] = append(want[v], n)
			}
		}
	}
	for v := range d.modes {
		slices.Sort(want[v])
		if got := d.attachedTo(v); !slices.Equal(got, want[v]) {
			return fmt.Sprintf("%s attached to %v, want %v", v, got, want[v])
		}
	}
	for _, n := range d.e.NodeNames {
		if msg := d.diffStatus(n, want); msg != "" {
			return msg
		}
		if msg := d.diffMounts(n, at, n == down); msg != "" {
			return msg
		}
	}
	return ""
}

func (d *demo) attachedTo(v cloud.VolumeID) []cloud.NodeName {
	var got []cloud.NodeName
	for _, inst := range d.e.Account.Attachments()[v] {
		for _, n := range d.e.NodeNames {
			if i, _ := d.e.Account.InstanceOf(n); i == inst {
				got = append(got, n)
			}
		}
	}
	slices.Sort(got)
	return got
}

func (d *demo) diffStatus(n cloud.NodeName, want map[cloud.VolumeID][]cloud.NodeName) string {
	st, err := d.e.Controller.NodeStatus(n, time.Second)
	if err != nil {
		return err.Error()
	}
	var listed []cloud.VolumeID
	for _, a := range st.VolumesAttached {
		listed = append(listed, cloud.VolumeID(a.VolumeId))
	}
	for v := range d.modes {
		if slices.Contains(want[v], n) != slices.Contains(listed, v) {
			return fmt.Sprintf("node %s reports %v attached", n, listed)
		}
	}
	return ""
}

// diffMounts reads node n's mounts on disk: exactly a stage per volume its
// workloads use and a publish per workload and volume, all mounted, and an
// agent that is ready. A machine that is down runs no agent and has no
// mounts, only the empty directories its reboot left.
func (d *demo) diffMounts(n cloud.NodeName, at placement, down bool) string {
	got, err := chaos.DiskMounts(d.e.NodeDir(n), d.mounter(n))
	if err != nil {
		return err.Error()
	}
	var want []string
	for uid, on := range at {
		if on != n || down {
			continue
		}
		for _, v := range d.uses[uid] {
			want = append(want, "publish "+uid+"/"+string(v))
			if !slices.Contains(want, "stage "+string(v)) {
				want = append(want, "stage "+string(v))
			}
		}
	}
	if down {
		got = slices.DeleteFunc(got, func(s string) bool { return strings.HasSuffix(s, ")") })
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Sprintf("node %s has on disk %v, want %v", n, got, want)
	}
	if a, ok := d.e.Agents[n]; ok {
		if st, err := a.Status(time.Second); err != nil || !st.Ready {
			return fmt.Sprintf("agent %s not ready (%v)", n, err)
		}
	}
	return ""
}

// sameMounts: node n's mounts on disk are the very ones before (same mount
// IDs, or for symlinks the same inodes): read back, not redone.
func (d *demo) sameMounts(n cloud.NodeName, before map[string]string) error {
	after, err := chaos.Identities(d.e.NodeDir(n), d.mounter(n))
	if err != nil {
		return err
	}
	if len(before) == 0 || !maps.Equal(before, after) {
		return fmt.Errorf("%s's mounts changed across the agent restart: before %v, after %v", n, before, after)
	}
	return nil
}

func (d *demo) podFile(n cloud.NodeName, uid string, v cloud.VolumeID) (string, error) {
	l, err := layout.New(d.e.NodeDir(n))
	if err != nil {
		return "", err
	}
	p, err := l.PodVolume(uid, d.plugin, string(v))
	return filepath.Join(p, "greeting.txt"), err
}

func (d *demo) writeFile(n cloud.NodeName, uid string, v cloud.VolumeID) error {
	p, err := d.podFile(n, uid, v)
	if err != nil {
		return err
	}
	return os.WriteFile(p, []byte("written by "+uid+" on "+string(n)+"\n"), 0o644)
}

func (d *demo) readFile(n cloud.NodeName, uid string, v cloud.VolumeID) error {
	p, err := d.podFile(n, uid, v)
	if err != nil {
		return err
	}
	got, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("data lost in the move: %w", err)
	}
	if want := "written by " + uid + " on n1\n"; string(got) != want {
		return fmt.Errorf("read %q, want %q", got, want)
	}
	return nil
}
