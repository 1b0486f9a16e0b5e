package simulation

import (
	"time"

	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
)

// batchMsg is SyncBatchFinished: what the instances of one batch have.
type batchMsg struct {
	Pass   uint64
	Actual map[cloud.NodeName]map[cloud.VolumeID]string
	AsOf   time.Time
}

// syncSim is the sync actor's loop over syncer.Batches and syncer.Compare:
// every SyncPeriod, the belief (VolumesAttached of every status), one
// InstanceVolumes call per batch of nodes, and the differences told to the
// volumes. A failed call changes nothing.
type syncSim struct {
	w        *world
	alive    bool
	inc      uint64
	pass     uint64
	inflight int
	rerun    bool
	believed map[cloud.NodeName]map[cloud.VolumeID]bool
	timer    *timer
}

func (s *syncSim) incarnation() uint64 { return s.inc }
func (s *syncSim) isAlive() bool       { return s.alive }

func (s *syncSim) start() {
	s.inc++
	s.alive, s.timer = true, &timer{}
	// Pass numbers of this incarnation never match an earlier one's.
	s.pass, s.inflight, s.rerun = s.w.incarnationBase(syncAddr), 0, false
	s.w.wakeAt(s.timer, syncAddr, s.w.now.Add(s.w.cfg.SyncPeriod))
}

func (s *syncSim) kill() { s.alive, s.believed = false, nil }

func (s *syncSim) receive(_ addr, msg any) {
	switch m := msg.(type) {
	case wakeMsg:
		s.startPass()
	case batchMsg:
		s.onBatch(m)
	}
}

func (s *syncSim) startPass() {
	if s.inflight > 0 {
		s.rerun = true
		return
	}
	s.pass++
	nodes := s.readBelief()
	batches := syncer.Batches(nodes, s.w.cloud.BatchSize())
	s.inflight = len(batches)
	if s.inflight == 0 {
		s.finish()
		return
	}
	for _, b := range batches {
		s.query(s.pass, b)
	}
}

func (s *syncSim) readBelief() []cloud.NodeName {
	s.believed = map[cloud.NodeName]map[cloud.VolumeID]bool{}
	specs, _ := s.w.st.Nodes()
	for _, n := range specs {
		s.believed[n.Name] = map[cloud.VolumeID]bool{}
	}
	statuses, _ := s.w.st.NodeStatuses()
	for _, st := range statuses {
		m := map[cloud.VolumeID]bool{}
		for v := range st.VolumesAttached {
			m[v] = true
		}
		s.believed[st.Name] = m
	}
	return sortedKeys(s.believed)
}

// query is one InstanceVolumes call for a batch; its answer comes back as
// a batchMsg (with no nodes when it failed).
func (s *syncSim) query(pass uint64, batch []cloud.NodeName) {
	w := s.w
	asOf, cs := w.now, w.plan.site("cloud sync")
	w.after(w.cloudLatency(cs), func() {
		insts := make([]cloud.InstanceID, 0, len(batch))
		for _, n := range batch {
			insts = append(insts, w.instance(n))
		}
		w.injectCloudError(cs, sim.MethodInstanceVolumes, "sync query")
		got, err := w.cloud.InstanceVolumes(bg, insts)
		w.tracef("cloud: sync query %v: %v err %v", batch, got, err)
		res := batchMsg{Pass: pass, Actual: map[cloud.NodeName]map[cloud.VolumeID]string{}, AsOf: asOf}
		if err == nil {
			for _, n := range batch {
				res.Actual[n] = got[w.instance(n)]
			}
		}
		w.reply(cs, asOf, syncAddr, res, batchMsg{Pass: pass, AsOf: asOf})
	})
}

func (s *syncSim) onBatch(m batchMsg) {
	if m.Pass != s.pass || s.inflight == 0 {
		return
	}
	s.inflight--
	for _, f := range syncer.Compare(s.believed, m.Actual) {
		s.w.send(syncAddr, volAddr(f.Volume), volume.Verified{Node: f.Node, Attached: f.Attached, DevicePath: f.DevicePath, AsOf: m.AsOf})
	}
	if s.inflight == 0 {
		s.finish()
	}
}

func (s *syncSim) finish() {
	if s.rerun {
		s.rerun = false
		s.startPass()
		return
	}
	s.w.wakeAt(s.timer, syncAddr, s.w.now.Add(s.w.cfg.SyncPeriod))
}
