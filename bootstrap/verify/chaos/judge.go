package chaos

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// recKind is what a record tells.
type recKind uint8

const (
	recCloud        recKind = iota // an attachment changed in the cloud
	recMountStart                  // a stage or publish is about to call mount
	recMountEnd                    // a stage or publish returned
	recUnmountEnd                  // an unstage or unpublish returned
	recStatus                      // a node status write is durable
	recStatusFailed                // a node status write failed: nothing written
	recForce                       // a ForceDetach event (permits a detach of a mounted volume)
	recNodeDown                    // a node went down: agent stopped, every mount gone
	recDevice                      // an agent resolved a volume's device path
	recRebase                      // a new watch of the cloud: its snapshot of every attachment
	recDelivered                   // an agent's Receive is handed a node status (received.go)
	recAgentStart                  // an agent incarnation starts, holding no status
	recCall                        // an agent starts a stage or publish call, in its Receive
	recNote                        // narrative, for the histories
)

// record is one stamped entry of the timeline.
type record struct {
	seq     uint64
	time    time.Time
	kind    recKind
	vol     cloud.VolumeID
	node    cloud.NodeName
	change  sim.Change // recCloud
	op      string     // stage, publish, unstage, unpublish (recCall: stage, publish)
	target  string     // mount target
	mounted bool       // recMountEnd, recUnmountEnd: a mount is at target afterwards
	err     string
	status  statusRec // recStatus, recDelivered
	// epoch fenced the status write (recStatus; 0: unfenced or read).
	epoch    uint64
	snapshot []sim.Change // recRebase: sorted by volume, then instance
	text     string       // recNote, recForce, recNodeDown, recStatusFailed; recMountEnd: why held is unknown
	// recMountEnd with CheckImages: the volume's image file (want) and
	// the one bound to the device mounted at target (held; "": unknown).
	want, held string
}

// statusRec is what a durable node status says about volumes.
type statusRec struct {
	attached map[cloud.VolumeID]string // VolumesAttached: volume -> device
	inUse    map[cloud.VolumeID]bool
}

type volNode struct {
	vol  cloud.VolumeID
	node cloud.NodeName
}

// historyLen bounds each volume's history, and keep how much of it a
// violation carries.
const (
	historyLen = 60
	keep       = 25
)

// judge replays the timeline in stamp order. Its state is the world as the
// records describe it at the stamp being judged.
type judge struct {
	att    map[cloud.VolumeID]map[cloud.InstanceID]cloud.NodeName // the cloud's attachments
	mounts map[cloud.NodeName]map[string]cloud.VolumeID           // targets mounted or mounting
	status map[cloud.NodeName]statusRec                           // latest durable status
	// epochs: the highest epoch of a status applied, per node.
	epochs map[cloud.NodeName]uint64
	// listed: the stamp of the durable write since which the node status
	// lists the volume in VolumesAttached (with its current device).
	listed map[volNode]uint64
	// granted: since the node status last started listing the volume in
	// VolumesInUse, some durable status listed it in VolumesAttached too:
	// the controller reported it attached after the node reported it in
	// use (I3).
	granted map[volNode]bool
	// lost: the stamp of the latest removal of the volume from the node's
	// instance by the cloud itself (terminate, delete, console).
	lost map[volNode]uint64
	// resolved: the stamp of the node's latest device resolution of the
	// volume, if the volume was attached there then (0 if it was not).
	resolved map[volNode]uint64
	// staged: the stamp of the start of the stage mounted (or mounting)
	// on the node.
	staged map[volNode]uint64
	forced map[volNode]bool
	// held: the node status each node's agent holds (received.go).
	held map[cloud.NodeName]held
	// decided: what the agent held when it started the call on the
	// volume whose mount start is still to come.
	decided    map[volNode]decision
	decisions  int // mount starts judged against a received status
	forceCount int
	mountCalls int // stages and publishes started
	diskChecks int // mounts whose disk was checked (CheckImages)
	history    map[cloud.VolumeID][]string
	violations []Violation
}

func (j *judge) init() {
	if j.att != nil {
		return
	}
	j.att = map[cloud.VolumeID]map[cloud.InstanceID]cloud.NodeName{}
	j.mounts = map[cloud.NodeName]map[string]cloud.VolumeID{}
	j.status = map[cloud.NodeName]statusRec{}
	j.epochs = map[cloud.NodeName]uint64{}
	j.listed, j.lost, j.forced = map[volNode]uint64{}, map[volNode]uint64{}, map[volNode]bool{}
	j.resolved, j.staged = map[volNode]uint64{}, map[volNode]uint64{}
	j.granted = map[volNode]bool{}
	j.held, j.decided = map[cloud.NodeName]held{}, map[volNode]decision{}
	j.history = map[cloud.VolumeID][]string{}
}

func (j *judge) step(r record) {
	j.init()
	switch r.kind {
	case recCloud:
		j.onCloud(r)
	case recMountStart:
		j.note(r, r.vol, "%s on %s started", r.op, r.node)
		j.onMountStart(r)
	case recMountEnd, recUnmountEnd:
		j.note(r, r.vol, "%s on %s done: err=%q mounted=%v", r.op, r.node, r.err, r.mounted)
		j.setMounted(r.node, r.target, r.vol, r.mounted)
		if r.kind == recMountEnd && r.mounted {
			j.onImage(r)
		}
		if !r.mounted && (r.op == "stage" || r.op == "unstage") {
			delete(j.staged, volNode{r.vol, r.node})
		}
	case recStatus:
		j.onStatus(r)
	case recStatusFailed:
		j.noteAll(r, "status %s write failed: %s", r.node, r.text)
	case recForce:
		j.note(r, r.vol, "%s", r.text)
		j.forced[volNode{r.vol, r.node}] = true
	case recNodeDown:
		j.noteAll(r, "node %s down (%s): mounts gone", r.node, r.text)
		delete(j.mounts, r.node)
		for k := range j.staged {
			if k.node == r.node {
				delete(j.staged, k)
			}
		}
	case recDevice:
		key := volNode{r.vol, r.node}
		j.resolved[key] = 0
		if j.attachedTo(r.vol, r.node) {
			j.resolved[key] = r.seq
		}
		j.note(r, r.vol, "device %s on %s resolved (attached=%v)", r.text, r.node, j.resolved[key] != 0)
	case recRebase:
		j.onRebase(r)
	case recDelivered:
		j.onDelivered(r)
	case recAgentStart:
		j.onAgentStart(r)
	case recCall:
		j.onCall(r)
	case recNote:
		j.note(r, r.vol, "%s", r.text)
	}
}

// onRebase re-bases the cloud's attachments on the snapshot of a new
// watch of the cloud (the last one ended: its process was killed), whose
// changes meanwhile were never seen one by one. An attachment the
// snapshot adds is judged for I1 as an attach at this stamp (a second
// exclusive attachment shows in the snapshot); one it lacks is removed
// unjudged, as the cloud's own removals are: its reason and time are
// unknown.
func (j *judge) onRebase(r record) {
	type volInst struct {
		vol  cloud.VolumeID
		inst cloud.InstanceID
	}
	in := map[volInst]bool{}
	for _, ch := range r.snapshot {
		in[volInst{ch.Volume, ch.Instance}] = true
	}
	for _, vol := range slices.Sorted(maps.Keys(j.att)) {
		on := j.att[vol]
		for _, inst := range slices.Sorted(maps.Keys(on)) {
			if !in[volInst{vol, inst}] {
				n := on[inst]
				delete(on, inst)
				j.lost[volNode{vol, n}] = r.seq
				j.note(r, vol, "cloud: no longer attached on %s (%s) in a new watch's snapshot", n, inst)
			}
		}
	}
	for _, ch := range r.snapshot {
		on := j.att[ch.Volume]
		if _, ok := on[ch.Instance]; ok {
			continue
		}
		ch.Reason = "seen in a new watch's snapshot"
		j.onCloud(record{seq: r.seq, time: r.time, kind: recCloud, vol: ch.Volume, node: ch.Node, change: ch})
	}
}

func (j *judge) onCloud(r record) {
	ch := r.change
	key := volNode{ch.Volume, ch.Node}
	j.note(r, ch.Volume, "cloud %s attached=%v on %s (%s)", ch.Reason, ch.Attached, ch.Node, ch.Instance)
	on := j.att[ch.Volume]
	if ch.Attached {
		if ch.Mode == cloud.Exclusive && len(on) > 0 {
			j.violate(r, "I1", ch.Volume, ch.Node, "exclusive volume attached to %s while attached to %v", ch.Instance, slices.Sorted(maps.Keys(on)))
		}
		if on == nil {
			on = map[cloud.InstanceID]cloud.NodeName{}
			j.att[ch.Volume] = on
		}
		on[ch.Instance] = ch.Node
		delete(j.forced, key) // a permit is for the attachment it was given for
		return
	}
	delete(on, ch.Instance)
	if ch.Reason != sim.ReasonDetach {
		// Removed by the cloud itself: not tether's doing, nor judged.
		j.lost[key] = r.seq
		return
	}
	if t := j.mountedAt(ch.Node, ch.Volume); t != "" {
		if j.forced[key] {
			j.forceCount++
		} else {
			j.violate(r, "I2", ch.Volume, ch.Node, "detached while mounted (or mounting) at %s", t)
		}
	}
	if _, listed := j.status[ch.Node].attached[ch.Volume]; listed {
		j.violate(r, "I4", ch.Volume, ch.Node, "detached while the durable node status lists it in VolumesAttached")
	}
}

// onMountStart judges I3: the volume must be attached to the node's
// instance in the cloud, the node's durable status must list it in use, and
// since it started doing so a durable status must have listed it attached
// (DESIGN.md: a node mounts only after it reported the volume in use and
// the controller reported it attached). A listing withdrawn after that is
// not the agent's to know before it acts: the controller withdraws one only
// when it is unsure of it (an old operation may land), never to detach a
// volume in use, and the cloud's ground truth is judged here on its own. A
// mount outliving its device is the cloud's doing
// only where the cloud took the volume away after tether checked: a stage
// whose device was resolved while attached and lost after that; a publish
// (which binds the stage, not the device) of a stage started before the
// loss, listed in the status since before the loss. A listing or a device
// resolution after the loss excuses nothing (that would be a stale cache,
// DESIGN.md's problem 1, or a device path trusted without a check).
func (j *judge) onMountStart(r record) {
	j.mountCalls++
	j.setMounted(r.node, r.target, r.vol, true)
	key := volNode{r.vol, r.node}
	lost := j.lost[key]
	excused := lost > j.resolved[key] && j.resolved[key] > 0
	if r.op == "publish" {
		excused = lost > j.staged[key] && j.staged[key] > 0 && lost > j.listed[key]
	} else {
		j.staged[key] = r.seq
	}
	st := j.status[r.node]
	_, listed := st.attached[r.vol]
	switch {
	case !j.attachedTo(r.vol, r.node) && !excused:
		j.violate(r, "I3", r.vol, r.node, "%s while not attached to the node's instance in the cloud", r.op)
	case !st.inUse[r.vol] || !j.granted[key]:
		j.violate(r, "I3", r.vol, r.node, "%s while the durable node status lists it attached=%v in-use=%v, and reported it attached since it was in use: %v",
			r.op, listed, st.inUse[r.vol], j.granted[key])
	}
	j.judgeReceived(r)
}

// attachedTo reports whether vol is attached to an instance backing n.
func (j *judge) attachedTo(vol cloud.VolumeID, n cloud.NodeName) bool {
	for _, on := range j.att[vol] {
		if on == n {
			return true
		}
	}
	return false
}

func (j *judge) onStatus(r record) {
	old, n := j.status[r.node], r.node
	if r.epoch != 0 {
		if r.epoch < j.epochs[n] {
			// Durable before the newer epoch's claim, recorded after a
			// write of it: superseded when it is seen.
			j.noteAll(r, "status %s of epoch %d superseded by epoch %d", n, r.epoch, j.epochs[n])
			return
		}
		j.epochs[n] = r.epoch
	}
	for v := range union(old.attached, r.status.attached) {
		was, wasOK := old.attached[v]
		is, isOK := r.status.attached[v]
		switch {
		case isOK && (!wasOK || was != is):
			j.listed[volNode{v, n}] = r.seq
			j.note(r, v, "status %s attached=%s", n, is)
		case wasOK && !isOK:
			delete(j.listed, volNode{v, n})
			j.note(r, v, "status %s attached=false", n)
		}
	}
	for v := range union(old.inUse, r.status.inUse) {
		if old.inUse[v] != r.status.inUse[v] {
			j.note(r, v, "status %s in-use=%v", n, r.status.inUse[v])
		}
		if !r.status.inUse[v] {
			delete(j.granted, volNode{v, n})
		}
	}
	for v := range r.status.attached {
		if r.status.inUse[v] {
			j.granted[volNode{v, n}] = true
		}
	}
	j.status[n] = r.status
}

// setMounted records whether a mount is (or may be) at target. A call
// that returns with a mount in place counts even if its machine went down
// meanwhile (a call outliving its agent lands all the same).
func (j *judge) setMounted(n cloud.NodeName, target string, vol cloud.VolumeID, mounted bool) {
	if !mounted {
		delete(j.mounts[n], target)
		return
	}
	if j.mounts[n] == nil {
		j.mounts[n] = map[string]cloud.VolumeID{}
	}
	j.mounts[n][target] = vol
}

// mountedAt returns a target where vol is mounted or mounting on n, or "".
func (j *judge) mountedAt(n cloud.NodeName, vol cloud.VolumeID) string {
	var found []string
	for t, v := range j.mounts[n] {
		if v == vol {
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return slices.Min(found)
}

func (j *judge) note(r record, vol cloud.VolumeID, format string, args ...any) {
	if vol == "" {
		return
	}
	line := fmt.Sprintf("%s #%d %s", r.time.Format("15:04:05.000"), r.seq, fmt.Sprintf(format, args...))
	h := append(j.history[vol], line)
	if len(h) > historyLen {
		h = slices.Delete(h, 0, len(h)-historyLen)
	}
	j.history[vol] = h
}

// noteAll notes a node-wide record in the history of every volume the
// judge has seen.
func (j *judge) noteAll(r record, format string, args ...any) {
	for v := range j.history {
		j.note(r, v, format, args...)
	}
}

func (j *judge) violate(r record, inv string, vol cloud.VolumeID, n cloud.NodeName, format string, args ...any) {
	h := j.history[vol]
	h = h[max(0, len(h)-keep):]
	j.violations = append(j.violations, Violation{Invariant: inv, Volume: vol, Node: n, Time: r.time,
		Detail: fmt.Sprintf("#%d ", r.seq) + fmt.Sprintf(format, args...), History: slices.Clone(h)})
}

func union[T any](a, b map[cloud.VolumeID]T) map[cloud.VolumeID]bool {
	out := map[cloud.VolumeID]bool{}
	for v := range a {
		out[v] = true
	}
	for v := range b {
		out[v] = true
	}
	return out
}
