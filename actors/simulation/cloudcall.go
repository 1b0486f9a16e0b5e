package simulation

import (
	"time"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// errTimeout is the message of a call whose response was lost.
const errTimeout = "context deadline exceeded"

// cloudLatency is how long after it was started a call takes effect:
// usually under 1.5 s, sometimes nearly the whole CloudTimeout, never more
// (the shells bound every call by it).
func (w *world) cloudLatency(s *site) time.Duration {
	slow, fast := s.uniform(1500*time.Millisecond, w.cfg.CloudTimeout-time.Second), s.uniform(20*time.Millisecond, 1500*time.Millisecond)
	if s.float() < 0.03 {
		return slow
	}
	return fast
}

// injectCloudError makes the next call of m fail before any effect, if the
// plan says so.
func (w *world) injectCloudError(s *site, m sim.Method, what string) {
	kinds := []cloud.Kind{cloud.KindRetryable, cloud.KindRetryable, cloud.KindThrottled, cloud.KindTerminal}
	k := kinds[s.index(len(kinds))]
	if !w.chance(s, w.cfg.Faults.CloudError) {
		return
	}
	w.fault("cloud error %s on %s", k, what)
	w.cloud.FailNext(m, 1, k)
}

// reply delivers the result of a call started at issued: soon, or (lost
// response) as a timeout error at issued+CloudTimeout, and maybe twice.
func (w *world) reply(s *site, issued time.Time, to addr, res, timedOut any) {
	soon, later := s.uniform(0, 20*time.Millisecond), s.uniform(0, 2*time.Second)
	lost, dup := w.chance(s, w.cfg.Faults.LostResponse), w.chance(s, w.cfg.Faults.DupResult)
	if lost {
		w.fault("lose the response to %s: %s", to, describe(res))
		w.sendResult(issued.Add(w.cfg.CloudTimeout), cloudAddr, to, timedOut)
		return
	}
	w.sendResult(w.now.Add(soon), cloudAddr, to, res)
	if dup {
		w.fault("duplicate the result to %s: %s", to, describe(res))
		w.sendResult(w.now.Add(later), cloudAddr, to, res)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// recordIntent is the shell's callCloud: the operation's intent, with its
// deadline, is in the store before the call is sent.
func (w *world) recordIntent(vol cloud.VolumeID, n cloud.NodeName, op uint64, attach bool) {
	must(w.st.PutIntent(store.Intent{Volume: vol, Node: n, Op: op, Attach: attach, Deadline: w.now.Add(w.cfg.CloudTimeout)}))
}

// callAttach is the shell's callAttach.
func (w *world) callAttach(vol cloud.VolumeID, f volume.CallAttach) {
	issued, s := w.now, w.plan.site("cloud attach "+string(vol))
	w.recordIntent(vol, f.Node, f.Op, true)
	w.after(w.cloudLatency(s), func() {
		w.injectCloudError(s, sim.MethodAttach, "attach "+string(vol)+" to "+string(f.Node))
		dev, err := w.cloud.Attach(bg, vol, w.instance(f.Node))
		w.tracef("cloud: attach %s to %s: device %q err %v", vol, f.Node, dev, err)
		res := volume.AttachDone{Node: f.Node, Op: f.Op, DevicePath: dev, Err: cloud.Classify(err), Msg: errString(err)}
		lost := volume.AttachDone{Node: f.Node, Op: f.Op, Err: cloud.KindRetryable, Msg: errTimeout}
		w.reply(s, issued, volAddr(vol), res, lost)
	})
}

// callDetach is the shell's callDetach.
func (w *world) callDetach(vol cloud.VolumeID, f volume.CallDetach) {
	issued, s := w.now, w.plan.site("cloud detach "+string(vol))
	w.recordIntent(vol, f.Node, f.Op, false)
	w.after(w.cloudLatency(s), func() {
		w.injectCloudError(s, sim.MethodDetach, "detach "+string(vol)+" from "+string(f.Node))
		if f.Force != "" {
			w.chk.forcing = vn{vol, f.Node}
		}
		err := w.cloud.Detach(bg, vol, w.instance(f.Node))
		w.chk.forcing = vn{}
		w.tracef("cloud: detach %s from %s (force %q): err %v", vol, f.Node, f.Force, err)
		res := volume.DetachDone{Node: f.Node, Op: f.Op, Err: cloud.Classify(err), Msg: errString(err)}
		lost := volume.DetachDone{Node: f.Node, Op: f.Op, Err: cloud.KindRetryable, Msg: errTimeout}
		w.reply(s, issued, volAddr(vol), res, lost)
	})
}

// verify is the shell's verifyNodes: one VolumesAreAttached call per batch
// of nodes. At start-up the answer is one restoredMsg for the incarnation
// that asked; later one Verified per node, nothing if a call failed.
func (w *world) verify(vol cloud.VolumeID, nodes []cloud.NodeName, start bool) {
	asOf, inc, to := w.now, w.vols[vol].inc, volAddr(vol)
	s := w.plan.site("cloud verify " + string(vol))
	soon := s.uniform(0, 20*time.Millisecond)
	answer := func(t time.Time, attached map[cloud.NodeName]bool, failed bool) {
		if start {
			w.sendResult(t, cloudAddr, to, restoredMsg{Inc: inc, Attached: attached, AsOf: asOf, Failed: failed})
			return
		}
		if failed {
			return
		}
		var msgs []any
		for _, n := range sortedKeys(attached) {
			msgs = append(msgs, volume.Verified{Node: n, Attached: attached[n], AsOf: asOf})
		}
		w.sendResult(t, cloudAddr, to, msgs...)
	}
	if len(nodes) == 0 {
		answer(w.now.Add(soon), map[cloud.NodeName]bool{}, false)
		return
	}
	w.after(w.cloudLatency(s), func() {
		attached, failed := w.queryAttached(s, vol, nodes)
		if w.chance(s, w.cfg.Faults.LostResponse) {
			w.fault("lose the response to the verify of %s on %v", vol, nodes)
			answer(asOf.Add(w.cfg.CloudTimeout), map[cloud.NodeName]bool{}, true)
			return
		}
		answer(w.now.Add(soon), attached, failed)
	})
}

func (w *world) queryAttached(s *site, vol cloud.VolumeID, nodes []cloud.NodeName) (map[cloud.NodeName]bool, bool) {
	attached := map[cloud.NodeName]bool{}
	for _, batch := range syncer.Batches(nodes, w.cloud.BatchSize()) {
		query := map[cloud.InstanceID][]cloud.VolumeID{}
		for _, n := range batch {
			query[w.instance(n)] = []cloud.VolumeID{vol}
		}
		w.injectCloudError(s, sim.MethodVolumesAreAttached, "verify of "+string(vol))
		res, err := w.cloud.VolumesAreAttached(bg, query)
		w.tracef("cloud: verify %s on %v: %v err %v", vol, batch, res, err)
		if err != nil {
			return attached, true
		}
		for _, n := range batch {
			attached[n] = res[w.instance(n)][vol]
		}
	}
	return attached, false
}
