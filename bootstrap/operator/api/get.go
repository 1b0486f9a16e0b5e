package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// Get lists in pages, as Kubernetes lists do: in name order, at most limit
// objects, and a continue token that resumes after the last name listed. A
// page also ends early when its next object would take the response past
// responseBudget. Each object's status is asked of its actor (bounded by
// actorTimeout), so a page also bounds that work.
const (
	defaultLimit = 500
	maxLimit     = 1000
	// responseBudget bounds the bytes of a response's objects and events,
	// well under gRPC's default 4 MiB message limit (one object alone may
	// exceed it: a page always holds at least one).
	responseBudget = 1 << 20
)

func (s *service) Get(_ context.Context, req *messages.GetRequest) (*messages.GetResponse, error) {
	kind, err := kindOf(req.Kind)
	if err != nil {
		return nil, toStatus(err)
	}
	if req.Limit < 0 {
		return nil, toStatus(fmt.Errorf("%w: limit %d: want 0 (the default, %d) or more", controller.ErrInvalid, req.Limit, defaultLimit))
	}
	if req.Name != "" {
		if req.Continue != "" {
			return nil, toStatus(fmt.Errorf("%w: continue lists the next page of a list: not with a name", controller.ErrInvalid))
		}
		res, _, err := s.one(kind, req.Name)
		return res, toStatus(err)
	}
	after, err := decodeContinue(kind, req.Continue)
	if err != nil {
		return nil, toStatus(err)
	}
	limit := int(req.Limit)
	if limit == 0 {
		limit = defaultLimit
	}
	res, err := s.page(kind, after, min(limit, maxLimit))
	return res, toStatus(err)
}

// page lists up to limit objects of kind named after after.
func (s *service) page(kind, after string, limit int) (*messages.GetResponse, error) {
	res := &messages.GetResponse{}
	st := s.ctl.Store()
	var last string
	var more bool
	var err error
	switch kind {
	case "volume":
		var specs []store.VolumeSpec
		if specs, err = st.VolumesAfter(cloud.VolumeID(after), limit+1); err == nil {
			res.Volumes, last, more = fill(specs, limit, s.volumeInfo, func(v store.VolumeSpec) string { return string(v.ID) })
		}
	case "node":
		var specs []store.NodeSpec
		if specs, err = st.NodesAfter(cloud.NodeName(after), limit+1); err == nil {
			res.Nodes, last, more = fill(specs, limit, s.nodeInfo, func(n store.NodeSpec) string { return string(n.Name) })
		}
	default:
		var ws []store.Workload
		if ws, err = st.WorkloadsAfter(after, limit+1); err == nil {
			mounts := newMountIndex(s.ctl)
			info := func(w store.Workload) *messages.WorkloadInfo { return s.workloadInfo(w, mounts) }
			res.Workloads, last, more = fill(ws, limit, info, func(w store.Workload) string { return w.UID })
		}
	}
	if err != nil {
		return nil, err
	}
	if more {
		res.Continue = encodeContinue(kind, last)
	}
	return res, nil
}

// fill converts specs (up to limit+1, in name order) into a page: at most
// limit infos within responseBudget, the name of the last, and whether
// objects remain after it.
func fill[S any, I proto.Message](specs []S, limit int, info func(S) I, name func(S) string) (page []I, last string, more bool) {
	left := responseBudget
	for i, spec := range specs {
		if i == limit {
			return page, last, true
		}
		in := info(spec)
		n := itemSize(in)
		if n > left && len(page) > 0 {
			return page, last, true
		}
		left -= n
		page, last = append(page, in), name(spec)
	}
	return page, last, false
}

// itemSize is m's size as an element of a repeated field: tag, length, m.
func itemSize(m proto.Message) int { return 1 + protowire.SizeBytes(proto.Size(m)) }

// one is Get of the object named; uid is its ObjectUID.
func (s *service) one(kind, name string) (res *messages.GetResponse, uid string, err error) {
	res = &messages.GetResponse{}
	st := s.ctl.Store()
	var ok bool
	switch kind {
	case "volume":
		var v store.VolumeSpec
		if v, ok, err = st.Volume(cloud.VolumeID(name)); ok {
			res.Volumes, uid = []*messages.VolumeInfo{s.volumeInfo(v)}, v.ObjectUID
		}
	case "node":
		var n store.NodeSpec
		if n, ok, err = st.Node(cloud.NodeName(name)); ok {
			res.Nodes, uid = []*messages.NodeInfo{s.nodeInfo(n)}, n.ObjectUID
		}
	default:
		var w store.Workload
		if w, ok, err = st.Workload(name); ok {
			res.Workloads, uid = []*messages.WorkloadInfo{s.workloadInfo(w, newMountIndex(s.ctl))}, w.ObjectUID
		}
	}
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s %q", errNotFound, kind, name)
	}
	if err != nil {
		return nil, "", err
	}
	return res, uid, nil
}

// Describe shows the events of the object's current incarnation only
// (its ObjectUID), the newest that fit in responseBudget with the object.
func (s *service) Describe(ctx context.Context, req *messages.DescribeRequest) (*messages.DescribeResponse, error) {
	kind, err := kindOf(req.Kind)
	if err != nil {
		return nil, toStatus(err)
	}
	obj, uid, err := s.one(kind, req.Name)
	if err != nil {
		return nil, toStatus(err)
	}
	res := &messages.DescribeResponse{Object: obj}
	evs, _, err := s.ctl.ListEvents(ctx, events.Query{Kind: events.Kind(kind), Name: req.Name, UID: uid})
	if err != nil {
		return nil, toStatus(err)
	}
	infos := make([]*messages.EventInfo, len(evs))
	for i, e := range evs {
		infos[i] = &messages.EventInfo{TimeUnixNano: e.Time.UnixNano(), Type: e.Type, Node: e.Node, Warning: e.Warning, Message: e.Message}
	}
	res.Events, res.OmittedEvents = newestWithin(infos, responseBudget-proto.Size(obj))
	return res, nil
}

// mountIndex asks each node's agent for its mounts once (per page): an
// agent's status serves every workload of its node.
type mountIndex struct {
	ctl    *controller.Controller
	byNode map[cloud.NodeName]map[string][]string // workload name -> mounted volumes; nil: no answer
}

func newMountIndex(ctl *controller.Controller) *mountIndex {
	return &mountIndex{ctl: ctl, byNode: map[cloud.NodeName]map[string][]string{}}
}

// mounted lists the volumes mounted for the workload named on node.
func (m *mountIndex) mounted(node cloud.NodeName, workload string) []string {
	idx, ok := m.byNode[node]
	if !ok {
		if st, err := m.ctl.AgentStatus(node, actorTimeout); err == nil {
			idx = map[string][]string{}
			for _, mt := range st.Mounts {
				if mt.State == "Mounted" {
					idx[mt.WorkloadUid] = append(idx[mt.WorkloadUid], mt.VolumeId)
				}
			}
		}
		m.byNode[node] = idx
	}
	return idx[workload]
}

// A continue token is base64url of this JSON: the kind listed and the last
// name returned. Opaque to clients: only this file reads it.
type cursor struct {
	Version int    `json:"v"`
	Kind    string `json:"kind"`
	After   string `json:"after"`
}

const cursorVersion = 1

func encodeContinue(kind, after string) string {
	b, _ := json.Marshal(cursor{Version: cursorVersion, Kind: kind, After: after}) // cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeContinue returns the name a list of kind resumes after ("" for an
// empty token: from the start).
func decodeContinue(kind, token string) (string, error) {
	if token == "" {
		return "", nil
	}
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	switch {
	case err != nil:
	case c.Version != cursorVersion || c.After == "":
		err = fmt.Errorf("unknown form")
	case c.Kind != kind:
		err = fmt.Errorf("it continues a list of %ss, not of %ss", c.Kind, kind)
	}
	if err != nil {
		return "", fmt.Errorf("%w: invalid continue token %.40q: %v (pass the continue of the previous page unchanged, or none to start over)", controller.ErrInvalid, token, err)
	}
	return c.After, nil
}
