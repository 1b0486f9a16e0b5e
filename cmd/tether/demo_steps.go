package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
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
	name string
	do   func() error
	// mounts: also check the agents' mounts (false while a node's instance
	// is gone: its stale mounts are the node's business, not the cloud's).
	mounts bool
	check  func() error
}

func (d *demo) steps() bool {
	ctl, e := d.e.Controller, d.e
	inst1, _ := e.Cloud.InstanceOf("n1")
	at := placement{"app-1": "n1", "app-2": "n2", "app-3": "n3"}
	down := ""
	steps := []demoStepDef{
		{"workloads on three nodes: volumes attached and mounted", func() error {
			for v, mode := range demoModes {
				e.Cloud.CreateVolume(v, mode)
				if err := ctl.ApplyVolume(store.VolumeSpec{ID: v, Mode: mode}); err != nil {
					return err
				}
			}
			for uid, n := range at {
				if err := ctl.ApplyWorkload(store.Workload{UID: uid, Node: n, Volumes: demoUses[uid]}); err != nil {
					return err
				}
			}
			return nil
		}, true, func() error { return d.writeFile("n1", "app-1", "data-1") }},
		{"n1's instance terminated: the sync finds its volumes gone", func() error {
			down = "n1"
			return e.Cloud.Terminate(inst1)
		}, false, nil},
		{"n1's instance started again: volumes attached again", func() error {
			down = ""
			return e.Cloud.Start(inst1)
		}, true, nil},
		{"n2's agent restarted: mounts read back from disk, none redone", func() error {
			if err := e.StopAgent("n2"); err != nil {
				return err
			}
			return e.StartAgent("n2")
		}, true, func() error {
			for _, ev := range e.Events.For(events.Ref{Kind: events.KindNode, Name: "n2"}) {
				if ev.Type == "Reconstructed" {
					return nil
				}
			}
			return fmt.Errorf("no Reconstructed event for n2")
		}},
		{"app-1 moved to n2: data-1 detached from n1, attached to n2, data intact", func() error {
			at["app-1"] = "n2"
			return ctl.ApplyWorkload(store.Workload{UID: "app-1", Node: "n2", Volumes: demoUses["app-1"]})
		}, true, func() error { return d.readFile("n2", "app-1", "data-1") }},
		{"everything deleted: unmounted and detached", func() error {
			for uid := range at {
				if err := ctl.DeleteWorkload(uid); err != nil {
					return err
				}
			}
			clear(at)
			for v := range demoModes {
				if err := ctl.DeleteVolume(v); err != nil {
					return err
				}
			}
			return nil
		}, true, nil},
	}
	for i, s := range steps {
		t0 := time.Now()
		step := demoStep{Name: s.name}
		err := s.do()
		if err == nil {
			err = d.until(func() string { return d.diff(at, down, s.mounts) })
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
		fmt.Fprintf(d.out, "[%d/%d] %-72s %5.2fs %s\n", i+1, len(steps), s.name, step.Seconds, mark)
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

// diff compares the cloud's truth, the node statuses and the agents'
// mounts with what the placement calls for.
func (d *demo) diff(at placement, down string, mounts bool) string {
	want := map[cloud.VolumeID][]cloud.NodeName{}
	for uid, n := range at {
		for _, v := range demoUses[uid] {
			if string(n) != down && !slices.Contains(want[v], n) {
				want[v] = append(want[v], n)
			}
		}
	}
	for v := range demoModes {
		slices.Sort(want[v])
		if got := d.attachedTo(v); !slices.Equal(got, want[v]) {
			return fmt.Sprintf("%s attached to %v, want %v", v, got, want[v])
		}
	}
	for _, n := range d.e.NodeNames {
		if msg := d.diffStatus(n, want); msg != "" {
			return msg
		}
		if mounts {
			if msg := d.diffMounts(n, at); msg != "" {
				return msg
			}
		}
	}
	return ""
}

func (d *demo) attachedTo(v cloud.VolumeID) []cloud.NodeName {
	var got []cloud.NodeName
	for _, inst := range d.e.Cloud.Attachments()[v] {
		for _, n := range d.e.NodeNames {
			if i, _ := d.e.Cloud.InstanceOf(n); i == inst {
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
	for v := range demoModes {
		if slices.Contains(want[v], n) != slices.Contains(listed, v) {
			return fmt.Sprintf("node %s reports %v attached", n, listed)
		}
	}
	return ""
}

func (d *demo) diffMounts(n cloud.NodeName, at placement) string {
	a, ok := d.e.Agents[n]
	if !ok {
		return fmt.Sprintf("no agent on %s", n)
	}
	st, err := a.Status(time.Second)
	if err != nil {
		return err.Error()
	}
	var got, want []string
	for _, m := range st.Mounts {
		if m.WorkloadUid != "" && m.State == "Mounted" {
			got = append(got, m.WorkloadUid+"/"+m.VolumeId)
		} else if m.WorkloadUid != "" || m.State != "Mounted" {
			got = append(got, m.WorkloadUid+"/"+m.VolumeId+"("+m.State+")")
		}
	}
	for uid, on := range at {
		if on == n {
			for _, v := range demoUses[uid] {
				want = append(want, uid+"/"+string(v))
			}
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Sprintf("node %s mounts %v, want %v", n, got, want)
	}
	return ""
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
