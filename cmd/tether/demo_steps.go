package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
)

// want is where each volume should be attached.
type want map[cloud.VolumeID][]cloud.NodeName

func (d *demo) steps() bool {
	ctl := d.e.Controller
	inst1, _ := d.e.Cloud.InstanceOf("n1")
	all := want{"data-1": {"n1"}, "data-2": {"n2"}, "data-3": {"n3"}, "shared": {"n1", "n2", "n3"}}
	steps := []struct {
		name string
		do   func() error
		want want
	}{
		{"workloads on three nodes attached", func() error {
			for v, mode := range demoModes {
				d.e.Cloud.CreateVolume(v, mode)
				if err := ctl.ApplyVolume(store.VolumeSpec{ID: v, Mode: mode}); err != nil {
					return err
				}
			}
			for i := 1; i <= 3; i++ {
				w := store.Workload{UID: fmt.Sprintf("app-%d", i), Node: cloud.NodeName(fmt.Sprintf("n%d", i)),
					Volumes: []cloud.VolumeID{cloud.VolumeID(fmt.Sprintf("data-%d", i)), "shared"}}
				if err := ctl.ApplyWorkload(w); err != nil {
					return err
				}
			}
			return nil
		}, all},
		{"n1's instance terminated: the sync finds its volumes gone", func() error {
			return d.e.Cloud.Terminate(inst1)
		}, want{"data-1": nil, "data-2": {"n2"}, "data-3": {"n3"}, "shared": {"n2", "n3"}}},
		{"n1's instance started again: volumes attached again", func() error {
			return d.e.Cloud.Start(inst1)
		}, all},
		{"app-1 moved to n2: data-1 detached from n1, attached to n2", func() error {
			return ctl.ApplyWorkload(store.Workload{UID: "app-1", Node: "n2", Volumes: []cloud.VolumeID{"data-1", "shared"}})
		}, want{"data-1": {"n2"}, "data-2": {"n2"}, "data-3": {"n3"}, "shared": {"n2", "n3"}}},
		{"everything deleted: everything detached", func() error {
			for i := 1; i <= 3; i++ {
				if err := ctl.DeleteWorkload(fmt.Sprintf("app-%d", i)); err != nil {
					return err
				}
			}
			for v := range demoModes {
				if err := ctl.DeleteVolume(v); err != nil {
					return err
				}
			}
			return nil
		}, want{}},
	}
	ok := true
	for i, s := range steps {
		t0 := time.Now()
		step := demoStep{Name: s.name}
		err := s.do()
		if err == nil {
			err = d.until(s.want)
		}
		step.Seconds = time.Since(t0).Seconds()
		step.Converged = err == nil
		mark := "ok"
		if err != nil {
			step.Error, mark, ok = err.Error(), "FAILED: "+err.Error(), false
		}
		d.rep.Steps = append(d.rep.Steps, step)
		fmt.Fprintf(d.out, "[%d/%d] %-62s %5.2fs %s\n", i+1, len(steps), s.name, step.Seconds, mark)
		if !ok {
			break
		}
	}
	return ok
}

// until polls the cloud's truth and the node statuses until they match w,
// or the step times out.
func (d *demo) until(w want) error {
	deadline := time.Now().Add(d.timeout)
	for {
		diff := d.diff(w)
		if diff == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not converged after %s: %s", d.timeout, diff)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *demo) diff(w want) string {
	truth := d.e.Cloud.Attachments()
	for v := range demoModes {
		var got []cloud.NodeName
		for _, inst := range truth[v] {
			for _, n := range d.e.NodeNames {
				if i, _ := d.e.Cloud.InstanceOf(n); i == inst {
					got = append(got, n)
				}
			}
		}
		slices.Sort(got)
		if !slices.Equal(got, w[v]) {
			return fmt.Sprintf("%s attached to %v, want %v", v, got, w[v])
		}
	}
	for _, n := range d.e.NodeNames {
		st, err := d.e.Controller.NodeStatus(n, time.Second)
		if err != nil {
			return err.Error()
		}
		var listed []cloud.VolumeID
		for _, a := range st.VolumesAttached {
			listed = append(listed, cloud.VolumeID(a.VolumeId))
		}
		for v := range demoModes {
			if slices.Contains(w[v], n) != slices.Contains(listed, v) {
				return fmt.Sprintf("node %s reports %v attached", n, listed)
			}
		}
	}
	return ""
}
