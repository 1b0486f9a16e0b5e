package remote

// Watch: the attachments of a sim cloud as a stream, a snapshot and then
// every real change (messages.CloudChange), for checkers in other
// processes. The server registers one synchronous observer per watch
// (sim.ObserveSyncFrom), which queues each change for the watch's sender
// without ever blocking the cloud; a watch whose queue overflows is ended
// with ErrWatchOverflow rather than left to drop changes silently.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// DefaultWatchQueue is how many changes ServeSim queues for each watch,
// beyond what gRPC's flow control holds: a watcher that falls further
// behind has its stream ended (ErrWatchOverflow). A change takes about a
// hundred bytes there.
const DefaultWatchQueue = 8192

// ErrWatchEnded is wrapped by every error of Client.Watch that is neither
// its ctx's nor its callback's: the stream broke (the cloud process
// stopped or was killed, the connection failed) or the server ended it.
// A watcher that watches again gets a fresh snapshot.
var ErrWatchEnded = errors.New("remote: watch ended")

// ErrWatchOverflow is wrapped (with ErrWatchEnded) by the error of a watch
// that the server ended because its watcher fell behind.
var ErrWatchOverflow = errors.New("remote: watcher fell behind (its queue on the server overflowed)")

// Watch implements messages.SimAdminServer. The handler waits while a
// sender goroutine sends: a sender blocked by flow control (a client that
// does not read) cannot see an overflow, and only the handler's return
// ends the stream, which then unblocks the sender.
func (a *admin) Watch(_ *messages.CloudWatchRequest, stream grpc.ServerStreamingServer[messages.CloudChange]) error {
	a.watches.Add(1)
	defer a.watches.Add(-1)
	q := &watchQueue{changes: make(chan sim.Change, a.queue), over: make(chan struct{})}
	current, stop := a.c.ObserveSyncFrom(q.push)
	defer stop()
	sent := make(chan error, 1)
	a.senders.Add(1)
	go func() {
		defer a.senders.Done()
		sent <- a.send(stream, q, current)
	}()
	select {
	case err := <-sent:
		return err
	case <-q.over:
		return a.overflow()
	}
}

func (a *admin) overflow() error {
	return toStatus(fmt.Errorf("remote: watch: more than %d changes waited for this watcher: %w", a.queue, ErrWatchOverflow))
}

// send sends the snapshot current, the synced mark, then the queued
// changes, until the stream ends or the queue overflows.
func (a *admin) send(stream grpc.ServerStreamingServer[messages.CloudChange], q *watchQueue, current []sim.Change) error {
	var seq uint64
	send := func(m *messages.CloudChange) error {
		seq++
		m.Seq = seq
		return stream.Send(m)
	}
	for _, ch := range current {
		m := changeMsg(ch)
		m.Snapshot = true
		if err := send(m); err != nil {
			return err
		}
	}
	if err := send(&messages.CloudChange{Synced: true}); err != nil {
		return err
	}
	ctx := stream.Context()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.over:
			return a.overflow()
		case ch := <-q.changes:
			if err := send(changeMsg(ch)); err != nil {
				return err
			}
		}
	}
}

// watchQueue holds the changes of one watch between the sim's observer
// and the sender.
type watchQueue struct {
	changes chan sim.Change
	full    bool          // only push reads and writes it: the sim calls it under its lock
	over    chan struct{} // closed by the first change that did not fit
}

// push queues ch without blocking; the first change that does not fit
// closes over, and no later change is queued: what the sender sends is
// always a prefix of the changes.
func (q *watchQueue) push(ch sim.Change) {
	if q.full {
		return
	}
	select {
	case q.changes <- ch:
	default:
		q.full = true
		close(q.over)
	}
}

func changeMsg(ch sim.Change) *messages.CloudChange {
	return &messages.CloudChange{
		TimeUnixNano: ch.Time.UnixNano(),
		VolumeId:     string(ch.Volume),
		InstanceId:   string(ch.Instance),
		Node:         string(ch.Node),
		Mode:         modeMsg(ch.Mode),
		Attached:     ch.Attached,
		Reason:       ch.Reason,
	}
}

// Event is one message of a watch (Client.Watch).
type Event struct {
	// Seq numbers the events of one watch: 1, 2, 3... without gaps.
	Seq uint64
	// Snapshot: Change is not a change but an attachment current when
	// the watch began (Attached set, Reason sim.ReasonSnapshot, Time the
	// watch's start). The snapshot comes first, sorted by volume then
	// instance.
	Snapshot bool
	// Synced: the snapshot is complete (it may have been empty); Change
	// is zero. Every later event is a change.
	Synced bool
	// Change is the attachment or the change, as the sim recorded it
	// (Time in the local zone, without a monotonic reading).
	Change sim.Change
}

// Watch watches the attachments of the sim cloud: it calls f with the
// snapshot of the current ones, then the Synced mark, then with every
// later real change (as sim.ObserveSync sees them), in order, until the
// watch ends. Applied to the snapshot in order, the changes give the
// ground truth after each. It returns f's error as soon as f returns one;
// an error wrapping ctx's once ctx is done; otherwise an error wrapping
// ErrWatchEnded, and ErrWatchOverflow as well if the server ended the
// watch because this watcher fell behind. f runs on Watch's goroutine:
// nothing more is read while it runs, and a watcher slower than the
// cloud's changes for long falls behind. The watch starts once the
// connection is ready (Watch waits for it until ctx is done). To go on
// after an error, watch again: a fresh snapshot comes first.
func (c *Client) Watch(ctx context.Context, f func(Event) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream when f or a bad message ends the watch
	stream, err := c.admin.Watch(ctx, &messages.CloudWatchRequest{}, grpc.WaitForReady(true))
	if err != nil {
		return watchError(ctx, err)
	}
	var seq uint64
	synced := false
	for {
		m, err := stream.Recv()
		if err != nil {
			return watchError(ctx, err)
		}
		ev, err := eventOf(m, seq+1, synced)
		if err != nil {
			return err
		}
		seq, synced = ev.Seq, synced || ev.Synced
		if err := f(ev); err != nil {
			return err
		}
	}
}

// eventOf converts m, which must be message seq of its stream, after the
// snapshot if synced.
func eventOf(m *messages.CloudChange, seq uint64, synced bool) (Event, error) {
	bad := func(why string) (Event, error) {
		return Event{}, fmt.Errorf("remote: watch: message %d: %s: %w", m.GetSeq(), why, ErrWatchEnded)
	}
	switch {
	case m.GetSeq() != seq:
		return bad(fmt.Sprintf("out of sequence (want %d)", seq))
	case synced && (m.GetSnapshot() || m.GetSynced()):
		return bad("snapshot after the synced mark")
	case !synced && !m.GetSnapshot() && !m.GetSynced():
		return bad("change before the synced mark")
	}
	ev := Event{Seq: seq, Snapshot: m.GetSnapshot(), Synced: m.GetSynced()}
	if ev.Synced {
		return ev, nil
	}
	ev.Change = sim.Change{
		Time:     time.Unix(0, m.GetTimeUnixNano()),
		Volume:   cloud.VolumeID(m.GetVolumeId()),
		Instance: cloud.InstanceID(m.GetInstanceId()),
		Node:     cloud.NodeName(m.GetNode()),
		Mode:     modeOf(m.GetMode()),
		Attached: m.GetAttached(),
		Reason:   m.GetReason(),
	}
	return ev, nil
}

// watchError is Watch's error for the end err of its stream under ctx.
func watchError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("remote: watch: %w", cerr)
	}
	if err == io.EOF {
		return fmt.Errorf("remote: watch: the server ended it: %w", ErrWatchEnded)
	}
	st := status.Convert(err)
	for _, d := range st.Details() {
		if ce, ok := d.(*messages.CloudError); ok {
			return fmt.Errorf("%w: %w", ErrWatchEnded, errorOf(st.Message(), ce))
		}
	}
	return fmt.Errorf("remote: watch: %w: %s: %s", ErrWatchEnded, st.Code(), st.Message())
}
