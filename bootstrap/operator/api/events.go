package api

import (
	"context"
	"fmt"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// ListEvents lists the durable log's events of the current incarnations
// only: an event of a deleted object, or of an earlier object of the same
// name, is the log's until its TTL, never shown as the name's.
func (s *service) ListEvents(ctx context.Context, req *messages.ListEventsRequest) (*messages.ListEventsResponse, error) {
	q, err := s.eventQuery(req)
	if err != nil {
		return nil, toStatus(err)
	}
	evs, _, err := s.ctl.ListEvents(ctx, q)
	if err != nil {
		return nil, toStatus(err)
	}
	cur := s.incarnations()
	infos := make([]*messages.EventInfo, 0, len(evs))
	for _, e := range evs {
		if cur.current(e) {
			infos = append(infos, eventInfo(e))
		}
	}
	res := &messages.ListEventsResponse{}
	res.Events, res.OmittedEvents = newestWithin(infos, responseBudget)
	return res, nil
}

// WatchEvents sends what ListEvents lists, then each new event of a
// current incarnation as the log delivers it.
func (s *service) WatchEvents(req *messages.ListEventsRequest, stream messages.Tether_WatchEventsServer) error {
	q, err := s.eventQuery(req)
	if err != nil {
		return toStatus(err)
	}
	ctx, cancel := context.WithCancel(stream.Context())
	defer cancel()
	evs, cursor, err := s.ctl.ListEvents(ctx, q)
	if err != nil {
		return toStatus(err)
	}
	cur := s.incarnations()
	var sendErr error
	send := func(e events.Event) {
		if sendErr != nil || !cur.current(e) {
			return
		}
		if sendErr = stream.Send(eventInfo(e)); sendErr != nil {
			cancel()
		}
	}
	for _, e := range evs {
		send(e)
	}
	if sendErr != nil {
		return sendErr
	}
	// A new object's events come after its creation: the watch asks the
	// store again for a name it did not know.
	cur.refresh = true
	if err := s.ctl.WatchEvents(ctx, q, cursor, send); err != nil {
		return toStatus(err)
	}
	return sendErr
}

// eventQuery is the query of req: a kind, or one object's current
// incarnation (which must exist).
func (s *service) eventQuery(req *messages.ListEventsRequest) (events.Query, error) {
	if req.Kind == "" {
		if req.Name != "" {
			return events.Query{}, fmt.Errorf("%w: events of %q: name the kind too (volume/%s, node/%s or workload/%s)", controller.ErrInvalid, req.Name, req.Name, req.Name, req.Name)
		}
		return events.Query{}, nil
	}
	kind, err := kindOf(req.Kind)
	if err != nil {
		return events.Query{}, err
	}
	q := events.Query{Kind: events.Kind(kind), Name: req.Name}
	if req.Name != "" {
		if _, q.UID, err = s.one(kind, req.Name); err != nil {
			return events.Query{}, err
		}
	}
	return q, nil
}

func eventInfo(e events.Event) *messages.EventInfo {
	var t int64
	if !e.Time.IsZero() {
		t = e.Time.UnixNano()
	}
	return &messages.EventInfo{TimeUnixNano: t, Type: e.Type, Node: e.Node, Warning: e.Warning, Message: e.Message,
		Kind: string(e.Object.Kind), Name: e.Object.Name, ObjectUid: e.Object.UID}
}

// newestWithin keeps the newest infos (oldest first) whose sizes fit in
// budget, and says how many older ones it left out.
func newestWithin(infos []*messages.EventInfo, budget int) ([]*messages.EventInfo, int32) {
	first := len(infos)
	for first > 0 {
		if budget -= itemSize(infos[first-1]); budget < 0 {
			break
		}
		first--
	}
	return infos[first:], int32(first)
}

// incarnations tells whether an event is of its object's current
// incarnation, asking the store once per name (again, with refresh, when
// the event's UID is not the one it knew: the name was created or reused
// since).
type incarnations struct {
	st      store.Store
	uids    map[events.Ref]string // Ref without UID -> current UID ("" : none)
	refresh bool
}

func (s *service) incarnations() *incarnations {
	return &incarnations{st: s.ctl.Store(), uids: map[events.Ref]string{}}
}

func (c *incarnations) current(e events.Event) bool {
	key := events.Ref{Kind: e.Object.Kind, Name: e.Object.Name}
	uid, ok := c.uids[key]
	if !ok || (c.refresh && uid != e.Object.UID) {
		uid = c.lookup(key)
		c.uids[key] = uid
	}
	return uid != "" && uid == e.Object.UID
}

// lookup is the current ObjectUID of ref ("" if there is none, or the
// store cannot say).
func (c *incarnations) lookup(ref events.Ref) string {
	switch ref.Kind {
	case events.KindVolume:
		if v, ok, err := c.st.Volume(cloud.VolumeID(ref.Name)); err == nil && ok {
			return v.ObjectUID
		}
	case events.KindNode:
		if n, ok, err := c.st.Node(cloud.NodeName(ref.Name)); err == nil && ok {
			return n.ObjectUID
		}
	case events.KindWorkload:
		if w, ok, err := c.st.Workload(ref.Name); err == nil && ok {
			return w.ObjectUID
		}
	}
	return ""
}
