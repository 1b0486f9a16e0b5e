package demo

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/messages"
	"github.com/tether/tether/node/layout"
)

// mutating are the calls that change what the driver has published,
// staged or published at a target.
var mutating = []string{"ControllerPublishVolume", "ControllerUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume", "NodePublishVolume", "NodeUnpublishVolume"}

// csiScript is the demo's steps on the fake CSI driver. A CSI node is the
// machine its plugin runs on: tether cannot power it off or terminate it
// (the sim script's middle steps), so the steps are those a driver sees:
// workloads mounted, sync passes that must not undo them, an agent
// restarted, a volume handed from one workload to the next, everything
// deleted. The fake mounts nothing (a target is an empty directory), so
// no file is written through it.
func (d *demo) csiScript(at placement) []demoStepDef {
	n1 := d.e.NodeNames[0]
	to := d.e.NodeNames[1%len(d.e.NodeNames)] // n1 while tether runs one CSI node
	var mark int                              // calls the driver had received when a step began
	handover := fmt.Sprintf("app-1 replaced by app-4 on %s: data-1 moves to its target, still staged", to)
	if to != n1 {
		handover = fmt.Sprintf("app-1 moved to %s as app-4: data-1 unpublished from %s, published to %s", to, n1, to)
	}
	return []demoStepDef{
		{fmt.Sprintf("workloads on %s: volumes published to the node, staged, published at targets", nodeList(at)),
			func() error { return d.applyAll(at) }, nil},
		{"two sync passes: nothing unpublished (published_node_ids not interpreted)", func() error {
			mark = len(d.fake.d.Calls())
			return d.syncPasses(2)
		}, func() error {
			return d.noneSince(mark, "", "ControllerUnpublishVolume", "NodeUnstageVolume", "NodeUnpublishVolume")
		}},
		{fmt.Sprintf("%s's agent restarted: mounts read back from its records, no call redone", n1), func() error {
			mark = len(d.fake.d.Calls())
			if err := d.e.StopAgent(n1); err != nil {
				return err
			}
			return d.e.StartAgent(n1)
		}, func() error { return d.noneSince(mark, "", mutating...) }},
		{handover, func() error {
			mark = len(d.fake.d.Calls())
			d.uses["app-4"], at["app-4"] = d.uses["app-1"], to
			if err := d.e.Controller.ApplyWorkload(store.Workload{UID: "app-4", Node: to, Volumes: d.uses["app-4"]}); err != nil {
				return err
			}
			delete(at, "app-1")
			return d.e.Controller.DeleteWorkload("app-1")
		}, func() error {
			if to != n1 {
				return nil
			}
			// On the same node the volume stays published to it and
			// staged: only app-1's target goes and app-4's comes.
			return d.noneSince(mark, "data-1", "ControllerPublishVolume", "ControllerUnpublishVolume", "NodeStageVolume", "NodeUnstageVolume")
		}},
		{"everything deleted: targets unpublished, volumes unstaged and unpublished",
			func() error { return d.deleteAll(at) }, nil},
	}
}

// syncPasses returns once the controller finished n sync passes from
// now, or an error after the step's timeout.
func (d *demo) syncPasses(n int) error {
	passes := make(chan struct{}, n)
	sub := d.e.System.EventStream.Subscribe(func(ev any) {
		if _, ok := ev.(*messages.SyncPassFinished); ok {
			select {
			case passes <- struct{}{}:
			default:
			}
		}
	})
	defer d.e.System.EventStream.Unsubscribe(sub)
	timeout := time.NewTimer(d.timeout)
	defer timeout.Stop()
	for i := range n {
		select {
		case <-passes:
		case <-timeout.C:
			return fmt.Errorf("%d of %d sync passes after %s", i, n, d.timeout)
		}
	}
	return nil
}

// nodeList names the nodes of a placement, "n1" or "n1, n2".
func nodeList(at placement) string {
	var ns []string
	for _, n := range at {
		if !slices.Contains(ns, string(n)) {
			ns = append(ns, string(n))
		}
	}
	slices.Sort(ns)
	return strings.Join(ns, ", ")
}

// noneSince fails if the driver received, after its first mark calls, a
// call of one of methods about vol ("": any volume).
func (d *demo) noneSince(mark int, vol cloud.VolumeID, methods ...string) error {
	var got []string
	for _, c := range d.fake.d.Calls()[mark:] {
		if slices.Contains(methods, c.Method) && (vol == "" || c.Volume == string(vol)) {
			got = append(got, c.Method+" "+c.Volume)
		}
	}
	if len(got) > 0 {
		return fmt.Errorf("the driver was asked %v", got)
	}
	return nil
}

// csiDiff compares the fake driver's state (its ground truth: where each
// volume is published, staged and published at a target), the node
// statuses and the agents' readiness with what the placement calls for.
func (d *demo) csiDiff(at placement) string {
	ids := d.fake.nodeIDs(d.e.NodeNames)
	want := map[cloud.VolumeID][]cloud.NodeName{}
	for uid, n := range at {
		for _, v := range d.uses[uid] {
			if !slices.Contains(want[v], n) {
				want[v] = append(want[v], n)
			}
		}
	}
	for _, v := range slices.Sorted(maps.Keys(d.modes)) {
		var wantIDs []string
		for _, n := range want[v] {
			wantIDs = append(wantIDs, ids[n])
		}
		slices.Sort(wantIDs)
		if got := d.fake.d.PublishedTo(string(v)); !slices.Equal(got, wantIDs) {
			return fmt.Sprintf("the driver has %s published to %v, want %v", v, got, wantIDs)
		}
		for _, n := range d.e.NodeNames {
			if msg := d.diffNodePaths(v, n, ids[n], at); msg != "" {
				return msg
			}
		}
	}
	for _, n := range d.e.NodeNames {
		if msg := d.diffStatus(n, want); msg != "" {
			return msg
		}
		a, ok := d.e.Agents[n]
		if !ok {
			return fmt.Sprintf("agent %s not running", n)
		}
		st, err := a.Status(time.Second)
		if err != nil || !st.Ready {
			return fmt.Sprintf("agent %s not ready (%v)", n, err)
		}
		if msg := settled(st, n, at, d.uses); msg != "" {
			return msg
		}
	}
	return ""
}

// settled reports, unless node n's agent holds exactly the placement's
// stages and publishes there, all done, what it holds: an agent with work
// pending may call the driver yet (the checks of the driver's calls wait
// for it).
func settled(st *messages.AgentStatus, n cloud.NodeName, at placement, uses map[string][]cloud.VolumeID) string {
	want := map[string]bool{}
	for uid, on := range at {
		for _, v := range uses[uid] {
			if on == n {
				want["stage "+string(v)], want["publish "+uid+"/"+string(v)] = true, true
			}
		}
	}
	var got []string
	done := len(st.Mounts) == len(want)
	for _, m := range st.Mounts {
		what := "stage " + m.VolumeId
		if m.WorkloadUid != "" {
			what = "publish " + m.WorkloadUid + "/" + m.VolumeId
		}
		got = append(got, what+" "+m.State)
		done = done && want[what] && m.State == "Mounted"
	}
	if !done {
		return fmt.Sprintf("agent %s holds %v, want %v all Mounted", n, got, slices.Sorted(maps.Keys(want)))
	}
	return ""
}

// diffNodePaths compares where the driver has vol staged and published
// at a target on node n (node ID id) with the layout's paths for the
// workloads placed there.
func (d *demo) diffNodePaths(v cloud.VolumeID, n cloud.NodeName, id string, at placement) string {
	l, err := layout.New(d.e.NodeDir(n))
	if err != nil {
		return err.Error()
	}
	var wantStaged, wantTargets []string
	for uid, on := range at {
		if on != n || !slices.Contains(d.uses[uid], v) {
			continue
		}
		target, err := l.PodVolume(uid, d.plugin, string(v))
		if err != nil {
			return err.Error()
		}
		wantTargets = append(wantTargets, target)
	}
	if len(wantTargets) > 0 {
		staging, err := l.GlobalMount(d.plugin, string(v))
		if err != nil {
			return err.Error()
		}
		wantStaged = []string{staging}
	}
	slices.Sort(wantTargets)
	if got := d.fake.d.Staged(string(v), id); !slices.Equal(got, wantStaged) {
		return fmt.Sprintf("the driver has %s staged on %s at %v, want %v", v, id, d.rel(got), d.rel(wantStaged))
	}
	if got := d.fake.d.Targets(string(v), id); !slices.Equal(got, wantTargets) {
		return fmt.Sprintf("the driver has %s published on %s at %v, want %v", v, id, d.rel(got), d.rel(wantTargets))
	}
	return ""
}

// rel is paths relative to the data directory, for messages.
func (d *demo) rel(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = strings.TrimPrefix(p, d.dataDir+"/")
	}
	return out
}

// callLine is a call as the demo prints it: its paths relative to the
// data directory.
func (d *demo) callLine(c csitest.Call) string {
	return strings.ReplaceAll(c.String(), d.dataDir+"/", "")
}
