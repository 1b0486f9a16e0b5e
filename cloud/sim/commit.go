package sim

// Group commit. A change is applied in memory under Cloud.mu and its
// record queued, in the order of the changes; its caller then waits, the
// lock released, until the record is durable. The first waiter that finds
// no write in progress becomes the writer: it takes every record queued,
// writes them to the log with one write and one fsync, without the lock,
// and settles them. Changes made meanwhile queue up for the next writer,
// so concurrent changes share writes and fsyncs, and the log's order is
// the order of the changes.
//
// The observers hear of a change once it is durable, in that order. A
// write that fails fails every change of its group and every change queued
// after it: memory goes back to the durable state (the store's image) and
// their calls fail; none is ever acknowledged.

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tether/tether/cloud"
)

// dirty is what changed in memory since the last record; guarded by
// Cloud.mu, kept only with a store.
type dirty struct {
	vols  map[cloud.VolumeID]struct{}
	insts map[cloud.InstanceID]struct{}
}

// reset empties the sets for the next commit. A cleared Go map keeps its
// slots, and ranging over it while it holds anything costs them all, not
// its length: after the bulk commit of a fleet's 10,000 instances, every
// attach's commit ranged over 10,000 slots, a fleet start's cost growing
// with the square of the fleet. A set that held many is dropped instead.
func (d *dirty) reset() {
	if len(d.vols) > smallDirty {
		d.vols = nil
	}
	if len(d.insts) > smallDirty {
		d.insts = nil
	}
	clear(d.vols)
	clear(d.insts)
}

// smallDirty is the most entries a dirty set keeps its slots for.
const smallDirty = 64

// touchVolLocked notes that volume id was created, changed or deleted.
func (c *Cloud) touchVolLocked(id cloud.VolumeID) {
	if c.state == nil {
		return
	}
	if c.dirty.vols == nil {
		c.dirty.vols = make(map[cloud.VolumeID]struct{})
	}
	c.dirty.vols[id] = struct{}{}
}

// touchInstLocked notes that instance id was created, changed (running
// flag, limit, attachments) or deleted.
func (c *Cloud) touchInstLocked(id cloud.InstanceID) {
	if c.state == nil {
		return
	}
	if c.dirty.insts == nil {
		c.dirty.insts = make(map[cloud.InstanceID]struct{})
	}
	c.dirty.insts[id] = struct{}{}
}

// changeRecordLocked returns the record of the changes made since the last
// one and forgets them.
func (c *Cloud) changeRecordLocked() logRecord {
	r := logRecord{Seq: c.seq, Tag: c.tag, Counters: c.stateCountersLocked()}
	for _, id := range sortedKeys(c.dirty.vols) {
		if v, ok := c.vols[id]; ok {
			r.Volumes = append(r.Volumes, stateVolumeOf(v))
		} else {
			r.DeletedVolumes = append(r.DeletedVolumes, id)
		}
	}
	for _, id := range sortedKeys(c.dirty.insts) {
		if in, ok := c.insts[id]; ok {
			r.Instances = append(r.Instances, stateInstanceOf(in))
		} else {
			r.DeletedInstances = append(r.DeletedInstances, id)
		}
	}
	c.dirty.reset()
	return r
}

// commitLocked makes the changes made since the last commit durable, then
// tells the synchronous observers about them and queues them for the
// others. It waits for the write without holding the lock, and returns
// with the lock held. Without StatePath nothing is written.
//
// If the state cannot be written it reverts the instances, volumes,
// attachments, instance ID counter, tag, AttachNew and DetachNew to the
// durable state (undoing the changes queued with it too, which fail as
// well), drops the observer notifications (observers only see durable
// changes) and returns an error naming the file that wraps the cause and
// cloud.ErrRetryable. Calls, Errors and Throttled are not reverted: they
// count calls, the failing one included, and the next write saves them.
func (c *Cloud) commitLocked() error {
	changes := c.obs.staged
	c.obs.staged = nil
	s := c.state
	if s == nil {
		c.publishLocked(changes)
		return nil
	}
	p := &pending{rec: c.changeRecordLocked(), changes: changes}
	data, err := json.Marshal(&p.rec)
	if err != nil { // not for these types; kept as a write failure
		c.revertLocked()
		return fmt.Errorf("state not saved to %s: encode: %w: %w", s.path, err, cloud.ErrRetryable)
	}
	s.last++
	p.seq, p.data = s.last, data
	s.queue = append(s.queue, p)
	c.obs.unwritten = append(c.obs.unwritten, changes...)
	for !p.done {
		if !s.writing {
			c.writeLocked()
			continue
		}
		s.cond.Wait()
	}
	return p.err
}

// writeLocked writes every queued change as one group, the lock released
// meanwhile, and settles them; then it compacts the log if it is due.
func (c *Cloud) writeLocked() {
	s := c.state
	group := s.queue
	s.queue, s.writing = nil, true
	c.mu.Unlock()
	err := s.writeGroup(group)
	c.mu.Lock()
	if err != nil {
		err = fmt.Errorf("state not saved to %s: %w: %w", s.path, err, cloud.ErrRetryable)
		for _, p := range slices.Concat(group, s.queue) {
			p.done, p.err = true, err
		}
		s.queue = nil
		c.revertLocked()
		s.settled, s.writing = s.last, false
		s.cond.Broadcast()
		return
	}
	for _, p := range group {
		p.done = true
		c.publishWrittenLocked(p.changes)
	}
	s.settled = group[len(group)-1].seq
	s.cond.Broadcast()
	if s.compactDue() {
		c.mu.Unlock()
		_ = s.compact() // best effort: on error, the next group starts a new generation
		c.mu.Lock()
	}
	s.writing = false
	s.cond.Broadcast()
}

// writeGroup appends the records of group to the log as one frame and
// syncs it, starting a new generation first if there is no log to append
// to. On success the image holds the group. On error the log is closed
// (the next write starts a new generation) after being cut back to what
// was durable (best effort), so that the files hold the image.
func (s *store) writeGroup(group []*pending) error {
	if s.log == nil {
		if err := s.compact(); err != nil {
			return err
		}
	}
	recs := make([][]byte, len(group))
	for i, p := range group {
		recs[i] = p.data
	}
	frame := groupFrame(recs)
	err := s.checkLog()
	if err == nil {
		err = s.appendSync(s.log, frame)
	}
	if err != nil {
		_ = s.log.Truncate(s.logSize)
		s.closeLog()
		s.folded = false
		return err
	}
	s.logSize += int64(len(frame))
	s.groups++
	s.folded = false
	for _, p := range group {
		s.img.apply(&p.rec)
	}
	return nil
}

// revertLocked puts the world back to the durable state and drops what
// was staged or is waiting for its write, for the observers.
func (c *Cloud) revertLocked() {
	c.applyWorldLocked(c.state.img.state(c.state.gen))
	c.dirty.reset()
	c.obs.staged, c.obs.unwritten = nil, nil
}

// lockSettled locks c.mu once every change made before is durable or
// undone, so that a read never shows a change that may still be undone.
func (c *Cloud) lockSettled() {
	c.mu.Lock()
	if s := c.state; s != nil {
		for target := s.last; s.settled < target; {
			s.cond.Wait()
		}
	}
}

// Fsyncs returns how many fsyncs the durable state made, of files and of
// directories: one per group of changes written, four per snapshot
// written (see Config.StatePath). Zero without StatePath.
func (c *Cloud) Fsyncs() int64 {
	if c.state == nil {
		return 0
	}
	return c.state.fsyncs.Load()
}

// Close waits for the changes being written, folds the log into the
// snapshot, so that the snapshot alone holds the state, and closes the
// log. It does not stop the Cloud: a later change starts a new log. A
// durable Cloud that is never closed loses nothing (Open folds what its
// log holds); closing it when done releases its file and makes the next
// Open read one file. Without StatePath it does nothing.
func (c *Cloud) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.state
	if s == nil {
		return nil
	}
	for s.writing || len(s.queue) > 0 {
		s.cond.Wait()
	}
	s.writing = true
	c.mu.Unlock()
	var err error
	if !s.folded {
		err = s.compact()
	}
	s.closeLog()
	c.mu.Lock()
	s.writing = false
	s.cond.Broadcast()
	if err != nil {
		return fmt.Errorf("sim: close: state not saved to %s: %w", s.path, err)
	}
	return nil
}
