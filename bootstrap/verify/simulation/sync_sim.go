package simulation

import (
	"time"

	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
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
	believed map[cloud.NodeName]map[cloud.VolumeID]string
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
	s.believed = map[cloud.NodeName]map[cloud.VolumeID]string{}
	specs, _ := s.w.st.Nodes()
	for _, n := range specs {
		s.believed[n.Name] = map[cloud.VolumeID]string{}
	}
	statuses, _ := s.w.st.NodeStatuses()
	for _, st := range statuses {
		s.believed[st.Name] = st.VolumesAttached
	}
	return sortedKeys(s.believed)
}

// query is the shell's query: the batch's nodes resolved through the
// cache (no instance: nothing attached there), then one InstanceVolumes
// call; its answer comes back as a batchMsg (without the nodes whose call
// failed). An instance the answer omits is gone: the cache drops it and
// nothing is attached to its node.
func (s *syncSim) query(pass uint64, batch []cloud.NodeName) {
	w := s.w
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
		res := batchMsg{Pass: pass, Actual: map[cloud.NodeName]map[cloud.VolumeID]string{}, AsOf: asOf}
		timedOut := batchMsg{Pass: pass, Actual: map[cloud.NodeName]map[cloud.VolumeID]string{}, AsOf: asOf}
		var gone []cloud.NodeName
		for _, n := range batch {
			id, ok := insts[n]
			switch {
			case !ok:
				res.Actual[n], timedOut.Actual[n] = map[cloud.VolumeID]string{}, map[cloud.VolumeID]string{}
			case err == nil:
				vols, exists := got[id]
				if !exists {
					gone = append(gone, n)
				}
				res.Actual[n] = vols
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

func (s *syncSim) onBatch(m batchMsg) {
	if m.Pass != s.pass || s.inflight == 0 {
		return
	}
	s.inflight--
	for _, f := range syncer.Compare(s.believed, m.Actual) {
		s.w.send(syncAddr, volAddr(f.Volume), &messages.AttachmentVerified{VolumeId: string(f.Volume), Node: string(f.Node), Attached: f.Attached, DevicePath: f.DevicePath, AsOfUnixNano: m.AsOf.UnixNano()})
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
