package simulation

import (
	"errors"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/syncer"
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

// verify is the volume host's Verify (the shell's verifier): one
// VolumesAreAttached call per batch of nodes, resolved through the cache
// when the verify is sent (a node no instance backs: not attached). The
// answer goes to the incarnation that asked, if it is still alive.
func (w *world) verify(h *volHost, nodes []cloud.NodeName, answer func(controller.VerifyAnswer)) {
	vol := h.v.id
	c := w.newCall("cloud verify "+string(vol), volAddr(vol))
	asOf, s := c.issued, c.s
	soon := s.uniform(0, 20*time.Millisecond)
	reply := func(t time.Time, attached map[cloud.NodeName]bool, failed bool) {
		ans := controller.VerifyAnswer{Attached: map[string]bool{}, AsOf: asOf}
		for n, att := range attached {
			ans.Attached[string(n)] = att
		}
		if failed {
			ans.Err = errors.New(errTimeout)
		}
		w.at(t, func() {
			if h.live() {
				answer(ans)
			}
		})
	}
	if len(nodes) == 0 {
		reply(w.now.Add(soon), map[cloud.NodeName]bool{}, false)
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
			reply(asOf.Add(w.cfg.CloudTimeout), map[cloud.NodeName]bool{}, true)
			return
		}
		reply(w.now.Add(soon), attached, failed)
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
