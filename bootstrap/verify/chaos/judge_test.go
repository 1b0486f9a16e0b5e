package chaos

import (
	"slices"
	"testing"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// Timelines of the rules' edge cases, fed straight to the checker: which
// invariants each must (and must not) report.

func attach(v cloud.VolumeID, n cloud.NodeName, mode cloud.AccessMode) record {
	return record{kind: recCloud, change: sim.Change{Volume: v, Node: n, Instance: cloud.InstanceID("i-" + n), Mode: mode, Attached: true, Reason: sim.ReasonAttach}}
}

func detach(v cloud.VolumeID, n cloud.NodeName, reason string) record {
	return record{kind: recCloud, change: sim.Change{Volume: v, Node: n, Instance: cloud.InstanceID("i-" + n), Reason: reason}}
}

func status(n cloud.NodeName, attached, inUse []cloud.VolumeID) record {
	st := statusRec{attached: map[cloud.VolumeID]string{}, inUse: map[cloud.VolumeID]bool{}}
	for _, v := range attached {
		st.attached[v] = "/dev/x" + string(v)
	}
	for _, v := range inUse {
		st.inUse[v] = true
	}
	return record{kind: recStatus, node: n, status: st}
}

func stage(v cloud.VolumeID, n cloud.NodeName) record {
	return record{kind: recMountStart, vol: v, node: n, op: "stage", target: "/d/" + string(n) + "/" + string(v)}
}

func staged(v cloud.VolumeID, n cloud.NodeName, mounted bool) record {
	r := stage(v, n)
	r.kind, r.mounted = recMountEnd, mounted
	return r
}

func unstaged(v cloud.VolumeID, n cloud.NodeName) record {
	r := stage(v, n)
	r.kind, r.op = recUnmountEnd, "unstage"
	return r
}

func publish(v cloud.VolumeID, n cloud.NodeName) record {
	return record{kind: recMountStart, vol: v, node: n, op: "publish", target: "/d/" + string(n) + "/pods/w/" + string(v)}
}

func device(v cloud.VolumeID, n cloud.NodeName) record {
	return record{kind: recDevice, vol: v, node: n}
}

var vs = []cloud.VolumeID{"v"}

// received is a node status handed to n's agent (WireAgents).
func received(n cloud.NodeName, attached, inUse []cloud.VolumeID) record {
	r := status(n, attached, inUse)
	r.kind = recDelivered
	return r
}

// started is n's agent starting a stage or publish of v.
func started(v cloud.VolumeID, n cloud.NodeName, op string) record {
	return record{kind: recCall, vol: v, node: n, op: op}
}

// rebase is a new watch's snapshot: the attachments of each volume given.
func rebase(on map[cloud.VolumeID][]cloud.NodeName) record {
	var snap []sim.Change
	for v, ns := range on {
		for _, n := range ns {
			snap = append(snap, sim.Change{Volume: v, Node: n, Instance: cloud.InstanceID("i-" + n), Mode: cloud.Exclusive, Attached: true, Reason: sim.ReasonSnapshot})
		}
	}
	return record{kind: recRebase, snapshot: snap}
}

func statusAt(epoch uint64, n cloud.NodeName, attached, inUse []cloud.VolumeID) record {
	r := status(n, attached, inUse)
	r.epoch = epoch
	return r
}

// showing is a stage's end on the loop cloud: the device it mounted is
// bound to image held (CheckImages); "" with why: not read.
func showing(v cloud.VolumeID, n cloud.NodeName, held, why string) record {
	r := staged(v, n, true)
	r.want, r.held, r.text = "/img/"+string(v), held, why
	return r
}

func TestJudgeTimelines(t *testing.T) {
	up := []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), device("v", "n1"), stage("v", "n1"), staged("v", "n1", true)}
	down := []record{unstaged("v", "n1"), status("n1", vs, nil), status("n1", nil, nil), detach("v", "n1", sim.ReasonDetach)}
	for _, tc := range []struct {
		name string
		tl   []record
		want []string
	}{
		{"attach, mount, unmount, detach in order", append(slices.Clone(up), down...), nil},
		{"exclusive on a second instance", append(slices.Clone(up), attach("v", "n2", cloud.Exclusive)), []string{"I1"}},
		{"multi-node on a second instance", []record{attach("v", "n1", cloud.MultiNode), attach("v", "n2", cloud.MultiNode)}, nil},
		{"detach while mounted", append(slices.Clone(up), status("n1", nil, nil), detach("v", "n1", sim.ReasonDetach)), []string{"I2"}},
		{"detach while a stage is in progress", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), stage("v", "n1"), status("n1", nil, vs), detach("v", "n1", sim.ReasonDetach)}, []string{"I2"}},
		{"failed stage that left nothing", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), stage("v", "n1"), staged("v", "n1", false), status("n1", nil, nil), detach("v", "n1", sim.ReasonDetach)}, nil},
		{"force detach permitted", append(slices.Clone(up), status("n1", nil, vs), record{kind: recForce, vol: "v", node: "n1"}, detach("v", "n1", sim.ReasonDetach)), nil},
		{"the cloud took it (terminate)", append(slices.Clone(up), detach("v", "n1", sim.ReasonTerminate)), nil},
		{"machine down, then detached", append(slices.Clone(up), record{kind: recNodeDown, node: "n1"}, status("n1", nil, nil), detach("v", "n1", sim.ReasonDetach)), nil},
		{"detach while listed attached", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, nil), detach("v", "n1", sim.ReasonDetach)}, []string{"I4"}},
		{"detach after a failed write", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, nil), {kind: recStatusFailed, node: "n1"}, detach("v", "n1", sim.ReasonDetach)}, []string{"I4"}},
		{"mount before attach", []record{status("n1", vs, vs), stage("v", "n1")}, []string{"I3"}},
		{"mount before in use", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, nil), stage("v", "n1")}, []string{"I3"}},
		{"mount before listed", []record{attach("v", "n1", cloud.Exclusive), status("n1", nil, vs), stage("v", "n1")}, []string{"I3"}},
		{"listing withdrawn after it was granted", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), status("n1", nil, vs), stage("v", "n1")}, nil},
		{"in use again without a new listing", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), status("n1", nil, nil),
			status("n1", nil, vs), stage("v", "n1")}, []string{"I3"}},
		{"listed before in use, then withdrawn", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, nil), status("n1", nil, vs), stage("v", "n1")}, []string{"I3"}},
		{"stage checked, then lost before the mount call", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), device("v", "n1"),
			detach("v", "n1", sim.ReasonConsole), stage("v", "n1")}, nil},
		{"stage on a device resolved after the loss", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs),
			detach("v", "n1", sim.ReasonConsole), device("v", "n1"), stage("v", "n1")}, []string{"I3"}},
		{"stage on a device never resolved", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs),
			detach("v", "n1", sim.ReasonTerminate), stage("v", "n1")}, []string{"I3"}},
		{"publish of a stage that outlived its device", append(slices.Clone(up), detach("v", "n1", sim.ReasonConsole), publish("v", "n1")), nil},
		{"publish listed again after the loss", append(slices.Clone(up), detach("v", "n1", sim.ReasonConsole),
			status("n1", nil, vs), status("n1", vs, vs), publish("v", "n1")), []string{"I3"}},
		{"publish after the stage is gone", append(slices.Clone(up), detach("v", "n1", sim.ReasonConsole),
			unstaged("v", "n1"), publish("v", "n1")), []string{"I3"}},
		{"a new watch shows a second exclusive attachment", []record{attach("v", "n1", cloud.Exclusive), rebase(map[cloud.VolumeID][]cloud.NodeName{"v": {"n1", "n2"}})}, []string{"I1"}},
		{"a new watch shows an attachment gone, unjudged", append(slices.Clone(up), rebase(nil)), nil},
		{"a new watch shows an attachment made meanwhile", []record{rebase(map[cloud.VolumeID][]cloud.NodeName{"v": {"n1"}}), status("n1", vs, vs), device("v", "n1"), stage("v", "n1")}, nil},
		{"a status of an older epoch recorded late", []record{attach("v", "n1", cloud.Exclusive), statusAt(5, "n1", vs, nil), statusAt(3, "n1", nil, nil),
			detach("v", "n1", sim.ReasonDetach)}, []string{"I4"}},
		{"a stage showing the volume's own disk", append(slices.Clone(up), showing("v", "n1", "/img/v", "")), nil},
		{"a stage showing another volume's disk", append(slices.Clone(up), showing("v", "n1", "/img/w", "")), []string{"I3"}},
		{"a stage showing a device that is no loop device", append(slices.Clone(up), showing("v", "n1", "device 8:1, not a bound loop device", "")), []string{"I3"}},
		{"a stage whose disk could not be read", append(slices.Clone(up), showing("v", "n1", "", "no mount at the target")), nil},
		{"stage on the status received", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), received("n1", vs, vs), started("v", "n1", "stage"), stage("v", "n1")}, nil},
		{"stage on a withdrawn listing received", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), status("n1", nil, vs),
			received("n1", vs, vs), received("n1", nil, vs), started("v", "n1", "stage"), stage("v", "n1")}, []string{"I3"}},
		{"stage decided before a withdrawal arrived", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), received("n1", vs, vs),
			started("v", "n1", "stage"), status("n1", nil, vs), received("n1", nil, vs), stage("v", "n1")}, nil},
		{"publish on a status not in use", append(slices.Clone(up), received("n1", vs, nil), started("v", "n1", "publish"), publish("v", "n1")), []string{"I3"}},
		{"stage by a new incarnation that received nothing", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), received("n1", vs, vs),
			{kind: recAgentStart, node: "n1"}, started("v", "n1", "stage"), stage("v", "n1")}, []string{"I3"}},
		{"stage of an earlier incarnation's call", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), received("n1", vs, vs),
			started("v", "n1", "stage"), {kind: recAgentStart, node: "n1"}, stage("v", "n1")}, nil},
		{"received on another node", []record{attach("v", "n1", cloud.Exclusive), status("n1", vs, vs), received("n2", vs, vs), started("v", "n1", "stage"), stage("v", "n1")}, []string{"I3"}},
		{"lost on another node", []record{attach("v", "n2", cloud.MultiNode), detach("v", "n2", sim.ReasonConsole), status("n1", vs, vs), stage("v", "n1")}, []string{"I3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Checker{}
			for _, r := range tc.tl {
				if r.kind == recCloud {
					r.vol, r.node = r.change.Volume, r.change.Node
				}
				c.add(r)
			}
			var got []string
			for _, v := range c.Violations() {
				got = append(got, v.Invariant)
				if len(v.History) == 0 {
					t.Errorf("%s without history", v)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v: %v", got, tc.want, c.Violations())
			}
		})
	}
}
