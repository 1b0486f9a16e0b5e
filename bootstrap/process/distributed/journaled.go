package distributed

// Journals (--journal): a member or an agent records what it does into a
// journal (bootstrap/verify/journal) at the points where the embedded chaos
// checker records it in process (bootstrap/verify/chaos: mounter.go, store.go,
// devices.go), so that tether chaos --distributed judges the same
// timeline across processes.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/verify/journal"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/node/agent"
	"github.com/tether/tether/node/mount"
)

// journalMounter records node's mount operations: a stage or publish
// BEFORE its mount call and when it returns; an unstage or unpublish
// before and when it returns. After a failed operation the target is
// inspected at once, by the goroutine that ran it, and what it shows is
// recorded (unsure counts as mounted).
type journalMounter struct {
	mount.Mounter
	j    *journal.Writer
	node string
}

func (m *journalMounter) Stage(source, target string) error {
	return m.mount("stage", target, func() error { return m.Mounter.Stage(source, target) })
}

func (m *journalMounter) Publish(staged, target string, ro bool) error {
	return m.mount("publish", target, func() error { return m.Mounter.Publish(staged, target, ro) })
}

func (m *journalMounter) Unstage(target string) error {
	return m.unmount("unstage", target, func() error { return m.Mounter.Unstage(target) })
}

func (m *journalMounter) Unpublish(target string) error {
	return m.unmount("unpublish", target, func() error { return m.Mounter.Unpublish(target) })
}

func (m *journalMounter) record(kind, op, target string) journal.Record {
	return journal.Record{Kind: kind, Node: m.node, Volume: filepath.Base(target), Op: op, Target: target}
}

func (m *journalMounter) mount(op, target string, f func() error) error {
	m.j.Write(m.record(journal.KindMountStart, op, target))
	err := f()
	r := m.record(journal.KindMountEnd, op, target)
	r.Mounted = err == nil || m.shows(target)
	if err != nil {
		r.Err = err.Error()
	}
	m.j.Write(r)
	return err
}

func (m *journalMounter) unmount(op, target string, f func() error) error {
	m.j.Write(m.record(journal.KindUnmountStart, op, target))
	err := f()
	r := m.record(journal.KindUnmountEnd, op, target)
	if err != nil {
		r.Err, r.Mounted = err.Error(), m.shows(target)
	}
	m.j.Write(r)
	return err
}

func (m *journalMounter) shows(target string) bool {
	st, _, err := m.Mounter.Inspect(target)
	return err != nil || st == mount.Mounted
}

// journalDevices records each device resolution that succeeded, when it
// returned.
type journalDevices struct {
	agent.Devices
	j    *journal.Writer
	node string
}

func (d journalDevices) Source(ctx context.Context, vol cloud.VolumeID, device string) (string, func(), error) {
	src, release, err := d.Devices.Source(ctx, vol, device)
	if err == nil {
		d.j.Write(journal.Record{Kind: journal.KindDevice, Node: d.node, Volume: string(vol), Text: device})
	}
	return src, release, err
}

// statusReadBack bounds how long a member tries to read a node status
// back after a write whose outcome is unknown.
const statusReadBack = 20 * time.Second

// journalStore records every node status write once it is durable, and
// the writes that failed; writes go through it one at a time, so that
// their records follow the order in which they became durable. Writes
// fail on purpose at the rate the chaos control sets (Faults).
//
// A write to etcd that fails may still have landed (the connection broke
// after the commit): the store then reads the status back at once and
// records what is durable, so that the timeline never keeps a status the
// store no longer has. The read-back carries the write's epoch: a record
// of an older epoch that comes later (another member's, stamped late) is
// known for older by the judge.
type journalStore struct {
	store.Store
	j  *journal.Writer
	mu sync.Mutex

	fmu sync.Mutex
	p   float64
	rng *rand.Rand
}

func (s *journalStore) setFailRate(p float64, seed uint64) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	s.p = p
	if s.rng == nil {
		s.rng = rand.New(rand.NewPCG(seed, seed^0x570e))
	}
}

func (s *journalStore) fail() bool {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	return s.p > 0 && s.rng.Float64() < s.p
}

func (s *journalStore) PutNodeStatus(st nodestatus.Status) error { return s.PutNodeStatusAt(st, 0) }

func (s *journalStore) PutNodeStatusAt(st nodestatus.Status, epoch uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := fmt.Errorf("chaos: put node status %s: %w", st.Name, store.ErrInjected)
	if !s.fail() {
		err = s.Store.PutNodeStatusAt(st, epoch)
	}
	if err == nil {
		s.j.Write(statusRecord(st, epoch, ""))
		return nil
	}
	s.j.Write(journal.Record{Kind: journal.KindStatusFailed, Node: string(st.Name), Epoch: epoch, Err: err.Error()})
	if !errors.Is(err, store.ErrInjected) && !errors.Is(err, store.ErrFenced) && !errors.Is(err, store.ErrTooBig) {
		s.readBack(st.Name, epoch, err)
	}
	return err
}

// readBack records node's durable status after a write that failed with
// err, whose outcome is unknown.
func (s *journalStore) readBack(name cloud.NodeName, epoch uint64, err error) {
	deadline := time.Now().Add(statusReadBack)
	for {
		st, found, rerr := s.Store.NodeStatus(name)
		if rerr == nil {
			if !found {
				st = nodestatus.Status{Name: name}
			}
			s.j.Write(statusRecord(st, epoch, "read back after a failed write: "+err.Error()))
			return
		}
		if time.Now().After(deadline) {
			s.j.Write(journal.Record{Kind: journal.KindStatusFailed, Node: string(name), Epoch: epoch,
				Err: "status unknown: read back failed: " + rerr.Error()})
			return
		}
		time.Sleep(100 * time.Millisecond) // the pace of asking a store that is down
	}
}

func statusRecord(st nodestatus.Status, epoch uint64, text string) journal.Record {
	r := journal.Record{Kind: journal.KindStatus, Node: string(st.Name), Epoch: epoch, Text: text, Attached: map[string]string{}}
	for v, dev := range maps.All(st.VolumesAttached) {
		r.Attached[string(v)] = dev
	}
	for v, ok := range st.VolumesInUse {
		if ok {
			r.InUse = append(r.InUse, string(v))
		}
	}
	return r
}

// journalEvents records volume events (ForceDetach permits detaches of
// mounted volumes; the others tell the volumes' histories).
func journalEvents(j *journal.Writer) func(events.Event) {
	return func(e events.Event) {
		if e.Object.Kind == events.KindVolume {
			j.Write(journal.Record{Kind: journal.KindEvent, Volume: e.Object.Name, Node: e.Node, Op: e.Type})
		}
	}
}

// openJournal opens path ("" : no journal, a nil Writer) and records the
// process's start.
func openJournal(path, what string) (*journal.Writer, error) {
	if path == "" {
		return nil, nil
	}
	j, err := journal.Open(path)
	if err != nil {
		return nil, err
	}
	j.Write(journal.Record{Kind: journal.KindStart, Text: what})
	return j, nil
}

// journalCloud records every call the controller makes to the cloud,
// before it is made (KindCloudCall): a member's journal then shows
// whether it ever acted on the cloud, which a member that never joined
// the placement (one its peers cannot reach) must never have done.
type journalCloud struct {
	cloud.Provider
	j *journal.Writer
}

// Listing implements cloud.Lister: the wrapped provider's.
func (c journalCloud) Listing() cloud.Listing { return cloud.ListingOf(c.Provider) }

func (c journalCloud) record(op string, vol cloud.VolumeID, insts ...cloud.InstanceID) {
	text := make([]string, len(insts))
	for i, in := range insts {
		text[i] = string(in)
	}
	slices.Sort(text)
	c.j.Write(journal.Record{Kind: journal.KindCloudCall, Op: op, Volume: string(vol), Text: strings.Join(text, ",")})
}

func (c journalCloud) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	c.record("attach", vol, inst)
	return c.Provider.Attach(ctx, vol, inst)
}

func (c journalCloud) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	c.record("detach", vol, inst)
	return c.Provider.Detach(ctx, vol, inst)
}

func (c journalCloud) VolumesAreAttached(ctx context.Context, q map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	c.record("volumes_are_attached", "", slices.Collect(maps.Keys(q))...)
	return c.Provider.VolumesAreAttached(ctx, q)
}

// InstanceIDs implements cloud.InstanceResolver if the wrapped provider
// does (a query: not journaled, as InstanceID is not).
func (c journalCloud) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	return cloud.ResolveInstances(ctx, c.Provider, nodes)
}

func (c journalCloud) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	c.record("instance_volumes", "", insts...)
	return c.Provider.InstanceVolumes(ctx, insts)
}
