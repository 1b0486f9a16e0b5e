package controller

import (
	"time"

	"github.com/sirupsen/logrus"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// SyncHost is what the sync actor's runner (SyncRunner) needs from whoever
// runs it: the Proto.Actor shell (syncActor) or the simulation's
// deterministic scheduler. One host serves one incarnation; its methods
// are called from the incarnation's turn and return at once.
type SyncHost interface {
	// Now reads the clock.
	Now() time.Time
	// SendVolume sends msg (a protobuf message) to the volume actor of v.
	SendVolume(v cloud.VolumeID, msg any)
	// WakeAt asks for a messages.Wake at (or soon after) at; a pending
	// earlier one is kept.
	WakeAt(at time.Time)
	// Query asks the cloud, off this turn, what each node of batch has
	// attached (one InstanceVolumes call, listBatch), and sends the
	// answer to this incarnation as a *messages.SyncBatchFinished of
	// pass; nothing once the incarnation ended.
	Query(pass uint64, batch []cloud.NodeName)
	// Record records an event about obj.
	Record(obj events.Ref, typ string, node cloud.NodeName, warning bool, msg string)
	// PassFinished: a pass ended after took (stats for the event stream
	// and the observer).
	PassFinished(st *messages.SyncPassFinished, took time.Duration)
}

// SyncStore is what the sync runner reads: the node statuses (what is
// believed attached) and the nodes.
type SyncStore interface {
	Node(cloud.NodeName) (store.NodeSpec, bool, error)
	Nodes() ([]store.NodeSpec, error)
	NodeStatus(cloud.NodeName) (nodestatus.Status, bool, error)
	NodeStatuses() ([]nodestatus.Status, error)
}

// SyncRunnerConfig is what one incarnation's runner is made of.
type SyncRunnerConfig struct {
	Host      SyncHost
	Store     SyncStore
	Listing   cloud.Listing
	BatchSize int
	Period    time.Duration
	Log       logrus.FieldLogger
	// Pass numbers this incarnation's passes from: answers for an
	// earlier incarnation, still queued, never match.
	Pass uint64
}

// SyncRunner is the sync actor's shell without Proto.Actor: its passes
// over the node statuses, the findings told to the volume actors. The
// production actor and the simulation run this same code.
type SyncRunner struct {
	host      SyncHost
	store     SyncStore
	listing   cloud.Listing
	batchSize int
	period    time.Duration
	log       logrus.FieldLogger
	pass      uint64
	inflight  int
	rerun     bool
	// asked: nodes SyncNodes asked for that no pass started since has
	// covered; partial: the pass in flight is over such nodes only.
	asked    map[cloud.NodeName]bool
	partial  bool
	believed map[cloud.NodeName]map[cloud.VolumeID]string // node -> volume -> device path
	stats    *messages.SyncPassFinished
	// extras: attachments a ListingMayOverstate cloud listed that no node
	// status has, reported once (extra.go), by the pass that last saw
	// them; a full pass that no longer sees one forgets it.
	extras  map[extraKey]uint64
	started time.Time
}

// NewSyncRunner returns the runner of one incarnation; its first pass is
// one Period away.
func NewSyncRunner(c SyncRunnerConfig) *SyncRunner {
	log := c.Log
	if log == nil {
		log = logrus.StandardLogger()
	}
	r := &SyncRunner{host: c.Host, store: c.Store, listing: c.Listing, batchSize: c.BatchSize, period: c.Period, log: log, pass: c.Pass}
	r.schedule()
	return r
}

// Handle handles one message: a Wake or SyncNow (a pass over every node),
// SyncNodes (a partial pass), a batch's answer.
func (a *SyncRunner) Handle(msg any) {
	switch m := msg.(type) {
	case *messages.Wake, *messages.SyncNow:
		a.start()
	case *messages.SyncNodes:
		a.ask(m.Nodes)
	case *messages.SyncBatchFinished:
		a.onBatch(m)
	}
}

// start starts a pass over every node, or, with one in flight, has one
// follow it.
func (a *SyncRunner) start() {
	if a.inflight > 0 {
		a.rerun = true
		return
	}
	a.asked = nil // every node is in this pass
	a.begin(nil)
}

// ask notes nodes to verify now, and starts a partial pass over them
// unless a pass is in flight (its end starts it then).
func (a *SyncRunner) ask(nodes []string) {
	if len(nodes) == 0 {
		return
	}
	if a.asked == nil {
		a.asked = map[cloud.NodeName]bool{}
	}
	for _, n := range nodes {
		a.asked[cloud.NodeName(n)] = true
	}
	if a.inflight == 0 {
		a.startAsked()
	}
}

// startAsked starts a partial pass over the nodes asked for.
func (a *SyncRunner) startAsked() {
	only := sortedKeys(a.asked)
	a.asked = nil
	a.begin(only)
}

// begin starts a pass: over every node if only is nil, else over those of
// only that are known (a partial pass).
func (a *SyncRunner) begin(only []cloud.NodeName) {
	a.pass++
	a.started = a.host.Now()
	a.partial = only != nil
	a.stats = &messages.SyncPassFinished{Pass: a.pass, StartedUnixNano: a.started.UnixNano(), Partial: a.partial}
	if a.listing == cloud.ListingNone {
		// The cloud cannot tell: nothing to compare the records with,
		// nothing read, nothing asked.
		a.finish()
		return
	}
	nodes, err := a.readBelief(only)
	if err != nil {
		a.log.Errorf("sync: reading node statuses: %v", err)
		a.schedule() // a partial pass's nodes wait for the periodic one
		return
	}
	a.stats.Nodes = int32(len(nodes))
	batches := syncer.Batches(nodes, a.batchSize)
	a.inflight = len(batches)
	if a.inflight == 0 {
		a.finish()
		return
	}
	for _, b := range batches {
		a.host.Query(a.pass, b)
	}
}

// readBelief snapshots VolumesAttached of every known node, or of those
// of only (if not nil).
func (a *SyncRunner) readBelief(only []cloud.NodeName) ([]cloud.NodeName, error) {
	if only != nil {
		return a.readSome(only)
	}
	statuses, err := a.store.NodeStatuses()
	if err != nil {
		return nil, err
	}
	specs, err := a.store.Nodes()
	if err != nil {
		return nil, err
	}
	a.believed = map[cloud.NodeName]map[cloud.VolumeID]string{}
	for _, s := range specs {
		a.believed[s.Name] = map[cloud.VolumeID]string{}
	}
	for _, st := range statuses {
		a.believed[st.Name] = st.VolumesAttached
	}
	return sortedKeys(a.believed), nil
}

// readSome is readBelief for the nodes of only, read one by one: a node
// is known by its status or, without one, by its spec.
func (a *SyncRunner) readSome(only []cloud.NodeName) ([]cloud.NodeName, error) {
	a.believed = map[cloud.NodeName]map[cloud.VolumeID]string{}
	for _, n := range only {
		st, ok, err := a.store.NodeStatus(n)
		if err != nil {
			return nil, err
		}
		if ok {
			a.believed[n] = st.VolumesAttached
			continue
		}
		if _, ok, err := a.store.Node(n); err != nil {
			return nil, err
		} else if ok {
			a.believed[n] = map[cloud.VolumeID]string{}
		}
	}
	return sortedKeys(a.believed), nil
}

func (a *SyncRunner) onBatch(m *messages.SyncBatchFinished) {
	if m.Pass != a.pass || a.inflight == 0 {
		return
	}
	a.inflight--
	a.stats.Calls++
	if m.Error != "" {
		a.stats.Errors++
		a.log.WithField("nodes", m.FailedNodes).Warnf("sync: cloud query failed, keeping what we believe: %s", m.Error)
	}
	actual := map[cloud.NodeName]map[cloud.VolumeID]string{}
	for n, nv := range m.Actual {
		vols := map[cloud.VolumeID]string{}
		for v, dev := range nv.Volumes {
			vols[cloud.VolumeID(v)] = dev
		}
		actual[cloud.NodeName(n)] = vols
	}
	for _, f := range syncer.Compare(a.believed, actual) {
		if f.Attached && !f.Moved && a.listing == cloud.ListingMayOverstate {
			a.extra(f)
			continue
		}
		if f.Moved {
			a.stats.Moved++
		} else if f.Attached {
			a.stats.Dangling++
		} else {
			a.stats.Lost++
		}
		a.host.SendVolume(f.Volume, &messages.AttachmentVerified{VolumeId: string(f.Volume), Node: string(f.Node),
			Attached: f.Attached, DevicePath: f.DevicePath, AsOfUnixNano: m.AsOfUnixNano})
	}
	if a.inflight == 0 {
		a.finish()
	}
}

func (a *SyncRunner) finish() {
	st := a.stats
	if !a.partial {
		a.forgetExtras(st.Pass)
	}
	a.host.PassFinished(st, a.host.Now().Sub(a.started))
	a.log.WithField("pass", st.Pass).Debugf("sync: %d nodes, %d calls, %d errors, %d lost, %d unknown attachments", st.Nodes, st.Calls, st.Errors, st.Lost, st.Dangling)
	if a.rerun {
		a.rerun = false
		a.start()
		return
	}
	a.schedule() // after a partial pass: the periodic wake pending keeps its time
	if len(a.asked) > 0 {
		a.startAsked()
	}
}

func (a *SyncRunner) schedule() { a.host.WakeAt(a.host.Now().Add(a.period)) }
