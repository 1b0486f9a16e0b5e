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
// plan says so. sent false: no call follows (the node did not resolve);
// the values are drawn all the same.
func (w *world) injectCloudError(s *site, m sim.Method, what string, sent bool) {
	kinds := []cloud.Kind{cloud.KindRetryable, cloud.KindRetryable, cloud.KindThrottled, cloud.KindTerminal}
	k := kinds[s.index(len(kinds))]
	if !sent {
		s.float()
		return
	}
	if !w.chance(s, w.cfg.Faults.CloudError) {
		return
	}
	w.fault("cloud error %s on %s", k, what)
	w.cloud.FailNext(m, 1, k)
}

// call is one cloud call of a controller core: where its faults are drawn,
// when it was sent, by which controller process, to whom it answers.
type call struct {
	s      *site
	issued time.Time
	epoch  uint64
	to     addr
	inc    uint64 // the caller's incarnation when it sent the call
}

func (w *world) newCall(site string, to addr) call {
	return call{s: w.plan.site(site), issued: w.now, epoch: w.ctrlEpoch, to: to, inc: w.actor(to).incarnation()}
}

// reply delivers the result of c: soon, or (lost response, or hung: lost
// true) as a timeout error at its deadline, and maybe twice. It reports
// whether the caller got the result itself.
func (w *world) reply(c call, res, timedOut any, hung bool, landed func()) bool {
	s := c.s
	soon, later := s.uniform(0, 20*time.Millisecond), s.uniform(0, 2*time.Second)
	lost, dup := w.chance(s, w.cfg.Faults.LostResponse), w.chance(s, w.cfg.Faults.DupResult)
	if lost || hung {
		if lost {
			w.fault("lose the response to %s: %s", c.to, describe(res))
		}
		w.sendResult(c.issued.Add(w.cfg.CloudTimeout), cloudAddr, c.to, c.epoch, timedOut)
		return false
	}
	if landed == nil {
		w.sendResult(w.now.Add(soon), cloudAddr, c.to, c.epoch, res)
	} else {
		w.at(w.now.Add(soon), func() {
			// The shell's landed: the caller's goroutine, still of the
			// incarnation that sent the call, shortens the intent before
			// the result reaches the actor.
			if a := w.actor(c.to); a.isAlive() && a.incarnation() == c.inc && c.epoch == w.ctrlEpoch {
				landed()
			}
			w.sendResult(w.now, cloudAddr, c.to, c.epoch, res)
		})
	}
	if dup {
		w.fault("duplicate the result to %s: %s", c.to, describe(res))
		w.sendResult(w.now.Add(later), cloudAddr, c.to, c.epoch, res)
	}
	return true
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

// sendOp is the shell's callCloud for an attach or detach of vol on n: the
// intent recorded, n resolved through the cache, then the call, which
// lands after the cloud's latency (a hung one at the very end of
// CloudTimeout, its reply lost). do carries the call out on the instance
// and returns its result and the result a timed-out caller gets. A call
// that fails NotFound makes the cache forget n, once its caller hears it.
func (w *world) sendOp(c call, vol cloud.VolumeID, n cloud.NodeName, op uint64, attach bool, what string,
	do func(cloud.InstanceID) (any, any, error)) {
	w.recordIntent(vol, n, op, attach)
	inst, rerr := w.resolve(n)
	// Hangs draw from a site of their own, so that the draws of c.s stay
	// as they were before hangs existed (older regression seeds replay).
	hs := w.plan.site("cloud hang " + string(vol))
	lat, hang, edge := w.cloudLatency(c.s), w.chance(hs, w.cfg.Faults.HangCall), hs.uniform(time.Millisecond, 10*time.Millisecond)
	if hang && rerr == nil {
		w.fault("hang the %s until its deadline", what)
		lat = w.cfg.CloudTimeout - edge
	}
	w.after(lat, func() {
		m := sim.MethodAttach
		if !attach {
			m = sim.MethodDetach
		}
		w.injectCloudError(c.s, m, what, rerr == nil)
		var res, lost any
		err := rerr
		if rerr == nil {
			res, lost, err = do(inst)
		} else {
			res, lost, _ = do("")
		}
		landed := func() {
			// A reply came: the call can no longer land after now.
			_ = w.st.PutIntent(store.Intent{Volume: vol, Node: n, Op: op, Attach: attach, Deadline: w.now})
		}
		if w.reply(c, res, lost, hang && rerr == nil, landed) {
			w.forgetInstance(n, err)
		}
	})
}

// callAttach is the shell's callAttach.
func (w *world) callAttach(vol cloud.VolumeID, f volume.CallAttach) {
	c := w.newCall("cloud attach "+string(vol), volAddr(vol))
	what := "attach " + string(vol) + " to " + string(f.Node)
	w.sendOp(c, vol, f.Node, f.Op, true, what, func(inst cloud.InstanceID) (any, any, error) {
		lost := volume.AttachDone{Node: f.Node, Op: f.Op, Err: cloud.KindRetryable, Msg: errTimeout}
		if inst == "" {
			msg := "no instance backs node " + string(f.Node)
			return volume.AttachDone{Node: f.Node, Op: f.Op, Err: cloud.KindNotFound, Msg: msg}, lost, nil
		}
		dev, err := w.cloud.Attach(bg, vol, inst)
		w.tracef("cloud: attach %s to %s (%s): device %q err %v", vol, f.Node, inst, dev, err)
		return volume.AttachDone{Node: f.Node, Op: f.Op, DevicePath: dev, Err: cloud.Classify(err), Msg: errString(err)}, lost, err
	})
}

// callDetach is the shell's callDetach.
func (w *world) callDetach(vol cloud.VolumeID, f volume.CallDetach) {
	c := w.newCall("cloud detach "+string(vol), volAddr(vol))
	what := "detach " + string(vol) + " from " + string(f.Node)
	w.sendOp(c, vol, f.Node, f.Op, false, what, func(inst cloud.InstanceID) (any, any, error) {
		lost := volume.DetachDone{Node: f.Node, Op: f.Op, Err: cloud.KindRetryable, Msg: errTimeout}
		if inst == "" {
			msg := "no instance backs node " + string(f.Node)
			return volume.DetachDone{Node: f.Node, Op: f.Op, Err: cloud.KindNotFound, Msg: msg}, lost, nil
		}
		if f.Force != "" {
			w.chk.forcing = vn{vol, f.Node}
		}
		err := w.cloud.Detach(bg, vol, inst)
		w.chk.forcing = vn{}
		w.tracef("cloud: detach %s from %s (%s, force %q): err %v", vol, f.Node, inst, f.Force, err)
		return volume.DetachDone{Node: f.Node, Op: f.Op, Err: cloud.Classify(err), Msg: errString(err)}, lost, err
	})
}

// verify is the shell's verifyNodes: one VolumesAreAttached call per batch
// of nodes, resolved through the cache when the verify is sent (a node no
// instance backs: not attached). At start-up the answer is one restoredMsg
// for the incarnation that asked; later one Verified per node, nothing if
// a call failed.
func (w *world) verify(vol cloud.VolumeID, nodes []cloud.NodeName, start bool) {
	inc := w.vols[vol].inc
	c := w.newCall("cloud verify "+string(vol), volAddr(vol))
	asOf, s := c.issued, c.s
	soon := s.uniform(0, 20*time.Millisecond)
	answer := func(t time.Time, attached map[cloud.NodeName]bool, failed bool) {
		if start {
			w.sendResult(t, cloudAddr, c.to, c.epoch, restoredMsg{Inc: inc, Attached: attached, AsOf: asOf, Failed: failed})
			return
		}
		if failed {
			return
		}
		var msgs []any
		for _, n := range sortedKeys(attached) {
			msgs = append(msgs, volume.Verified{Node: n, Attached: attached[n], AsOf: asOf})
		}
		w.sendResult(t, cloudAddr, c.to, c.epoch, msgs...)
	}
	if len(nodes) == 0 {
		answer(w.now.Add(soon), map[cloud.NodeName]bool{}, false)
		return
	}
	insts := map[cloud.NodeName]cloud.InstanceID{}
	for _, n := range nodes {
		insts[n], _ = w.resolve(n) // "": NotFound, nothing attached there
	}
	w.after(w.cloudLatency(s), func() {
		attached, failed := w.queryAttached(s, vol, nodes, insts)
		if w.chance(s, w.cfg.Faults.LostResponse) {
			w.fault("lose the response to the verify of %s on %v", vol, nodes)
			answer(asOf.Add(w.cfg.CloudTimeout), map[cloud.NodeName]bool{}, true)
			return
		}
		answer(w.now.Add(soon), attached, failed)
	})
}

func (w *world) queryAttached(s *site, vol cloud.VolumeID, nodes []cloud.NodeName, insts map[cloud.NodeName]cloud.InstanceID) (map[cloud.NodeName]bool, bool) {
	attached := map[cloud.NodeName]bool{}
	for _, batch := range syncer.Batches(nodes, w.cloud.BatchSize()) {
		query := map[cloud.InstanceID][]cloud.VolumeID{}
		for _, n := range batch {
			if insts[n] != "" {
				query[insts[n]] = []cloud.VolumeID{vol}
			}
		}
		w.injectCloudError(s, sim.MethodVolumesAreAttached, "verify of "+string(vol), len(query) > 0)
		var res map[cloud.InstanceID]map[cloud.VolumeID]bool
		var err error
		if len(query) > 0 {
			res, err = w.cloud.VolumesAreAttached(bg, query)
		}
		w.tracef("cloud: verify %s on %v (%v): %v err %v", vol, batch, query, res, err)
		if err != nil {
			return attached, true
		}
		for _, n := range batch {
			attached[n] = insts[n] != "" && res[insts[n]][vol]
		}
	}
	return attached, false
}
