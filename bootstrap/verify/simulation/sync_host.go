package simulation

import (
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// syncSim is the sync actor: the production runner (controller.SyncRunner)
// of its live incarnation, hosted by this scheduler (syncHost).
type syncSim struct {
	w     *world
	alive bool
	inc   uint64
	r     *controller.SyncRunner
	timer *timer
}

func (s *syncSim) incarnation() uint64 { return s.inc }
func (s *syncSim) isAlive() bool       { return s.alive }

func (s *syncSim) start() {
	w := s.w
	s.inc++
	s.alive, s.timer = true, &timer{}
	s.r = controller.NewSyncRunner(controller.SyncRunnerConfig{Host: &syncHost{s: s, inc: s.inc}, Store: w.st,
		Listing: cloud.ListingOf(w.cloud), BatchSize: w.cloud.BatchSize(), Period: w.cfg.SyncPeriod, Log: quiet,
		Pass: w.incarnationBase(syncAddr)})
}

func (s *syncSim) kill() { s.alive, s.r = false, nil }

func (s *syncSim) receive(_ addr, msg any) {
	if _, ok := msg.(wakeMsg); ok {
		msg = &messages.Wake{}
	}
	s.r.Handle(msg)
}

// syncHost is the SyncHost of one incarnation of the sync actor.
type syncHost struct {
	s   *syncSim
	inc uint64
}

func (h *syncHost) live() bool     { return h.s.alive && h.s.inc == h.inc }
func (h *syncHost) Now() time.Time { return h.s.w.now }

func (h *syncHost) SendVolume(v cloud.VolumeID, msg any) {
	if h.live() {
		h.s.w.send(syncAddr, volAddr(v), msg)
	}
}

func (h *syncHost) WakeAt(at time.Time) {
	if h.live() {
		h.s.w.wakeAt(h.s.timer, syncAddr, at)
	}
}

func (h *syncHost) Record(obj events.Ref, typ string, node cloud.NodeName, _ bool, msg string) {
	h.s.w.tracef("sync event %s %s node=%s: %s", typ, obj.Name, node, msg)
}

func (h *syncHost) PassFinished(st *messages.SyncPassFinished, took time.Duration) {
	h.s.w.tracef("sync pass %d: %d nodes, %d calls, %d errors, %d lost, %d dangling in %s", st.Pass, st.Nodes, st.Calls, st.Errors, st.Lost, st.Dangling, took)
}

// Query is the shell's query (the sync actor's listBatch, simplified to
// what the sim cloud needs): the batch's nodes resolved through the cache
// (no instance: nothing attached there), then one InstanceVolumes call;
// its answer comes back as a SyncBatchFinished (without the nodes whose
// call failed). An instance the answer omits is gone: the cache drops it
// and nothing is attached to its node.
func (h *syncHost) Query(pass uint64, batch []cloud.NodeName) {
	w := h.s.w
	c := w.newCall("cloud sync", syncAddr)
	asOf, cs := c.issued, c.s
	insts := map[cloud.NodeName]cloud.InstanceID{}
	var ids []cloud.InstanceID
	for _, n := range batch {
		if id, err := w.resolve(n); err == nil {
			insts[n] = id
			ids = append(ids, id)
		}
	}
	w.after(w.cloudLatency(cs), func() {
		w.injectCloudError(cs, sim.MethodInstanceVolumes, "sync query", len(ids) > 0)
		var got map[cloud.InstanceID]map[cloud.VolumeID]string
		var err error
		if len(ids) > 0 {
			got, err = w.cloud.InstanceVolumes(bg, ids)
		}
		w.tracef("cloud: sync query %v (%v): %v err %v", batch, ids, got, err)
		res := &messages.SyncBatchFinished{Pass: pass, Actual: map[string]*messages.NodeVolumes{}, AsOfUnixNano: asOf.UnixNano()}
		timedOut := &messages.SyncBatchFinished{Pass: pass, Actual: map[string]*messages.NodeVolumes{}, AsOfUnixNano: asOf.UnixNano(), Error: errTimeout}
		if err != nil {
			res.Error = err.Error()
		}
		var gone []cloud.NodeName
		for _, n := range batch {
			id, ok := insts[n]
			switch {
			case !ok:
				res.Actual[string(n)], timedOut.Actual[string(n)] = &messages.NodeVolumes{}, &messages.NodeVolumes{}
			case err == nil:
				vols, exists := got[id]
				if !exists {
					gone = append(gone, n)
				}
				nv := &messages.NodeVolumes{Volumes: map[string]string{}}
				for v, dev := range vols {
					nv.Volumes[string(v)] = dev
				}
				res.Actual[string(n)] = nv
			default:
				res.FailedNodes = append(res.FailedNodes, string(n))
			}
		}
		if w.reply(c, res, timedOut, false, nil) {
			for _, n := range gone {
				w.dropInstance(n, insts[n])
			}
			if err != nil {
				for _, n := range batch {
					w.forgetInstance(n, err)
				}
			}
		}
	})
}
