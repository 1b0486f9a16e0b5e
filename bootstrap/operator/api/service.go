package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

const actorTimeout = 5 * time.Second

type service struct {
	messages.UnimplementedTetherServer
	ctl   *controller.Controller
	nodes cloud.Provisioner
	// applying serializes applies: each plans the cloud's resources from
	// what the cloud and the desired state hold (provision.go).
	applying sync.Mutex
	// maxDocs and maxBytes bound an ApplyStream; 0 means
	// MaxApplyDocuments and MaxApplyBytes (tests set less).
	maxDocs, maxBytes int
}

func (s *service) Apply(_ context.Context, req *messages.ApplyRequest) (*messages.ApplyResponse, error) {
	changes := make([]controller.Change, 0, len(req.Documents))
	for i, d := range req.Documents {
		ch, err := changeOf(d)
		if err != nil {
			return nil, toStatus(fmt.Errorf("document %d: %w", i+1, err))
		}
		changes = append(changes, ch)
	}
	if len(changes) == 0 {
		return nil, toStatus(fmt.Errorf("%w: no documents", controller.ErrInvalid))
	}
	applied, err := s.applyChanges(changes)
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.ApplyResponse{Applied: applied, Counts: countApplied(applied)}, nil
}

// An ApplyStream apply is bounded in all, as one Apply is by
// MaxRequestBytes: the server holds every document of a stream (decoded)
// until the stream ends, and validates and commits them in one
// transaction. The bounds leave room for 100,000s of objects in one apply
// while keeping one stream's memory to a few GiB at worst.
const (
	// MaxApplyDocuments bounds the documents of one apply.
	MaxApplyDocuments = 1_000_000
	// MaxApplyBytes bounds the encoded size of one apply's chunks together.
	MaxApplyBytes = 512 << 20
)

// ApplyStream receives the documents of one apply in chunks and applies
// them as Apply does, all or nothing, once the stream has ended cleanly:
// its last chunk received, then the client's close. Anything else (an
// error, a cancel, a bound exceeded, a close before the last chunk)
// applies nothing.
func (s *service) ApplyStream(stream messages.Tether_ApplyStreamServer) error {
	changes, err := receiveChanges(stream, cmp.Or(s.maxDocs, MaxApplyDocuments), cmp.Or(s.maxBytes, MaxApplyBytes))
	if err != nil {
		return err
	}
	// A client gone by now would not learn the outcome: apply nothing.
	if err := stream.Context().Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	applied, err := s.applyChanges(changes)
	if err != nil {
		return toStatus(err)
	}
	res := &messages.ApplyResponse{Counts: countApplied(applied)}
	res.Applied, res.Omitted = withinBudget(applied, responseBudget)
	return stream.SendAndClose(res)
}

// receiveChanges reads a stream to its clean end and returns its
// documents as changes (at most maxDocs, from chunks of at most maxBytes
// together), or a status error saying why they are refused.
func receiveChanges(stream messages.Tether_ApplyStreamServer, maxDocs, maxBytes int) ([]controller.Change, error) {
	var changes []controller.Change
	size := 0
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, status.Errorf(codes.InvalidArgument, "apply stream closed after %d documents without its last chunk: nothing applied", len(changes))
		}
		if err != nil {
			return nil, err
		}
		size += proto.Size(chunk)
		if size > maxBytes {
			return nil, status.Errorf(codes.ResourceExhausted, "apply stream: more than %d bytes of documents, the bound of one apply: nothing applied (split the input over several applies)", maxBytes)
		}
		if len(changes)+len(chunk.Documents) > maxDocs {
			return nil, status.Errorf(codes.ResourceExhausted, "apply stream: more than %d documents, the bound of one apply: nothing applied (split the input over several applies)", maxDocs)
		}
		for _, d := range chunk.Documents {
			ch, err := changeOf(d)
			if err != nil {
				return nil, toStatus(fmt.Errorf("document %d: %w", len(changes)+1, err))
			}
			changes = append(changes, ch)
		}
		if chunk.Last {
			return changes, endOfStream(stream, chunk.Total, len(changes))
		}
	}
}

// endOfStream checks the last chunk's total and waits for the client's
// close: the stream's clean end.
func endOfStream(stream messages.Tether_ApplyStreamServer, total int64, got int) error {
	if total != int64(got) {
		return status.Errorf(codes.InvalidArgument, "apply stream: the last chunk says %d documents, %d were received: nothing applied", total, got)
	}
	if got == 0 {
		return toStatus(fmt.Errorf("%w: no documents", controller.ErrInvalid))
	}
	switch _, err := stream.Recv(); {
	case err == nil:
		return status.Error(codes.InvalidArgument, "apply stream: a chunk after the last: nothing applied")
	case !errors.Is(err, io.EOF):
		return err
	}
	return nil
}

// withinBudget returns the first lines that fit in budget bytes of a
// response, and how many did not.
func withinBudget(lines []string, budget int) (kept []string, omitted int64) {
	for i, l := range lines {
		if budget -= 1 + protowire.SizeBytes(len(l)); budget < 0 {
			return lines[:i], int64(len(lines) - i)
		}
	}
	return lines, 0
}

// countApplied counts the controller's lines ("volume/x created") by
// kind and verb, in a fixed order: kinds volume, node, workload; verbs
// created, configured, unchanged; any other after them as met.
func countApplied(lines []string) []*messages.ApplyCount {
	var counts []*messages.ApplyCount
	for _, kind := range []string{"volume", "node", "workload"} {
		for _, verb := range []string{"created", "configured", "unchanged"} {
			counts = append(counts, &messages.ApplyCount{Kind: kind, Verb: verb})
		}
	}
	for _, l := range lines {
		ref, verb, _ := strings.Cut(l, " ")
		kind, _, _ := strings.Cut(ref, "/")
		i := slices.IndexFunc(counts, func(c *messages.ApplyCount) bool { return c.Kind == kind && c.Verb == verb })
		if i < 0 {
			i = len(counts)
			counts = append(counts, &messages.ApplyCount{Kind: kind, Verb: verb})
		}
		counts[i].Count++
	}
	return slices.DeleteFunc(counts, func(c *messages.ApplyCount) bool { return c.Count == 0 })
}

// changeOf converts one document.
func changeOf(d *messages.Document) (controller.Change, error) {
	switch x := d.GetDoc().(type) {
	case *messages.Document_Volume:
		v, err := volumeSpecOf(x.Volume)
		if err != nil {
			return controller.Change{}, err
		}
		return controller.Change{Volume: &v}, nil
	case *messages.Document_Node:
		return controller.Change{Node: &store.NodeSpec{Name: cloud.NodeName(x.Node.Name)}}, nil
	case *messages.Document_Workload:
		w := store.Workload{UID: x.Workload.Name, Node: cloud.NodeName(x.Workload.Node)}
		for _, v := range x.Workload.Volumes {
			w.Volumes = append(w.Volumes, cloud.VolumeID(v.Name))
			if v.ReadOnly {
				w.ReadOnly = append(w.ReadOnly, cloud.VolumeID(v.Name))
			}
		}
		return controller.Change{Workload: &w}, nil
	}
	return controller.Change{}, fmt.Errorf("%w: empty document", controller.ErrInvalid)
}

// ModeOf parses an access mode ("" means ReadWriteOnce). ReadOnlyMany is
// multi-node and read-only (store.VolumeSpec.ReadOnly); controller.ModeName
// names a mode back.
func ModeOf(s string) (mode cloud.AccessMode, readOnly bool, err error) {
	switch s {
	case "", "ReadWriteOnce":
		return cloud.Exclusive, false, nil
	case "ReadWriteMany":
		return cloud.MultiNode, false, nil
	case "ReadOnlyMany":
		return cloud.MultiNode, true, nil
	}
	return 0, false, fmt.Errorf("%w: unknown access mode %q (want ReadWriteOnce, ReadWriteMany or ReadOnlyMany)", controller.ErrInvalid, s)
}

func (s *service) Delete(_ context.Context, req *messages.DeleteRequest) (*messages.DeleteResponse, error) {
	kind, err := kindOf(req.Kind)
	if err != nil {
		return nil, toStatus(err)
	}
	names, err := deleteNames(req)
	if err != nil {
		return nil, toStatus(err)
	}
	errs := make([]error, len(names))
	forEach(len(names), func(i int) { errs[i] = s.exists(kind, names[i]) })
	if err := errors.Join(errs...); err != nil {
		return nil, toStatus(err)
	}
	switch kind {
	case "volume":
		ids := make([]cloud.VolumeID, len(names))
		for i, n := range names {
			ids[i] = cloud.VolumeID(n)
		}
		// A desired volume's disk may hold data: it must not look like the
		// empty leftover of an apply that never committed (provision.go).
		forEach(len(ids), func(i int) {
			if s.nodes.Uncommitted(ids[i]) {
				if err := s.nodes.CommitVolume(ids[i]); err != nil {
					errs[i] = fmt.Errorf("volume %q: its disk is still tagged uncommitted and the tag cannot be removed, so it is not deleted (try again): %w", ids[i], err)
				}
			}
		})
		if err := errors.Join(errs...); err != nil {
			return nil, toStatus(err)
		}
		if len(ids) == 1 {
			err = s.ctl.DeleteVolume(ids[0])
		} else {
			err = s.ctl.DeleteVolumes(ids)
		}
	case "node":
		for _, n := range names {
			if err = s.ctl.DeleteNode(cloud.NodeName(n)); err != nil {
				break
			}
		}
	default:
		if len(names) == 1 {
			err = s.ctl.DeleteWorkload(names[0])
		} else {
			err = s.ctl.DeleteWorkloads(names)
		}
	}
	return &messages.DeleteResponse{}, toStatus(err)
}

// MaxDeleteNames bounds the objects of one Delete.
const MaxDeleteNames = 100_000

// deleteNames are the objects req names, refused if any is empty or
// repeated, or if there are more than MaxDeleteNames.
func deleteNames(req *messages.DeleteRequest) ([]string, error) {
	names := append([]string{req.GetName()}, req.GetNames()...)
	if len(names) > MaxDeleteNames {
		return nil, fmt.Errorf("%w: %d objects in one delete, at most %d", controller.ErrInvalid, len(names), MaxDeleteNames)
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		switch {
		case n == "":
			return nil, fmt.Errorf("%w: delete: name %d is empty", controller.ErrInvalid, i+1)
		case seen[n]:
			return nil, fmt.Errorf("%w: delete: %q named twice", controller.ErrInvalid, n)
		}
		seen[n] = true
	}
	return names, nil
}

// exists returns errNotFound (wrapped, naming the object) unless it exists.
func (s *service) exists(kind, name string) error {
	st := s.ctl.Store()
	var ok bool
	var err error
	switch kind {
	case "volume":
		_, ok, err = st.Volume(cloud.VolumeID(name))
	case "node":
		_, ok, err = st.Node(cloud.NodeName(name))
	default:
		_, ok, err = st.Workload(name)
	}
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s %q", errNotFound, kind, name)
	}
	return err
}

func (s *service) volumeInfo(v store.VolumeSpec) *messages.VolumeInfo {
	info := &messages.VolumeInfo{Spec: volumeDoc(v, s.shownMode(v))}
	info.ObjectUid = v.ObjectUID
	// An actor that has not yet heard of this volume (a deleted one of the
	// same name) speaks for another: no status then.
	if st, err := s.ctl.VolumeStatus(v.ID, actorTimeout); err == nil && st.ObjectUid == v.ObjectUID {
		info.DesiredNodes, info.Attachments = st.DesiredNodes, st.Attachments
	}
	return info
}

func (s *service) nodeInfo(n store.NodeSpec) *messages.NodeInfo {
	info := &messages.NodeInfo{Spec: &messages.NodeDoc{Name: string(n.Name)}, ObjectUid: n.ObjectUID}
	if st, err := s.ctl.NodeStatus(n.Name, actorTimeout); err == nil && st.ObjectUid == n.ObjectUID {
		info.Status = st
	}
	if inst, ok := s.nodes.InstanceOf(n.Name); ok {
		info.InstanceId, info.InstanceRunning = string(inst), s.nodes.Running(inst)
	}
	return info
}

func (s *service) workloadInfo(w store.Workload, mounts *mountIndex) *messages.WorkloadInfo {
	doc := &messages.WorkloadDoc{Name: w.UID, Node: string(w.Node)}
	for _, v := range w.Volumes {
		doc.Volumes = append(doc.Volumes, &messages.WorkloadVolumeDoc{Name: string(v), ReadOnly: slices.Contains(w.ReadOnly, v)})
	}
	info := &messages.WorkloadInfo{Spec: doc, Phase: "Pending", ObjectUid: w.ObjectUID}
	info.MountedVolumes = mounts.mounted(w.Node, w.UID)
	if len(info.MountedVolumes) == len(w.Volumes) {
		info.Phase = "Running"
	}
	return info
}

func (s *service) NodeOperation(_ context.Context, req *messages.NodeOperationRequest) (*messages.NodeOperationResponse, error) {
	if err := s.exists("node", req.Node); err != nil {
		return nil, toStatus(err)
	}
	n := cloud.NodeName(req.Node)
	switch req.Operation {
	case "out-of-service", "in-service":
		s.ctl.SetOutOfService(n, req.Operation == "out-of-service")
		return &messages.NodeOperationResponse{Result: fmt.Sprintf("node/%s marked %s", n, req.Operation)}, nil
	case "terminate", "start":
		inst, ok := s.nodes.InstanceOf(n)
		if !ok {
			return nil, toStatus(fmt.Errorf("%w: no instance backs node %q", errNotFound, n))
		}
		op := s.nodes.Terminate
		if req.Operation == "start" {
			op = s.nodes.Start
		}
		if err := op(inst); err != nil {
			return nil, toStatus(err)
		}
		return &messages.NodeOperationResponse{Result: fmt.Sprintf("instance %s of node/%s: %s", inst, n, req.Operation)}, nil
	}
	return nil, toStatus(fmt.Errorf("%w: unknown node operation %q (want terminate, start, out-of-service or in-service)", controller.ErrInvalid, req.Operation))
}
