package api

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

const actorTimeout = 5 * time.Second

type service struct {
	messages.UnimplementedTetherServer
	ctl   *controller.Controller
	nodes Nodes
	// applying serializes applies: each plans the cloud's resources from
	// what the cloud and the desired state hold (provision.go).
	applying sync.Mutex
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
	return &messages.ApplyResponse{Applied: applied}, nil
}

// changeOf converts one document.
func changeOf(d *messages.Document) (controller.Change, error) {
	switch x := d.GetDoc().(type) {
	case *messages.Document_Volume:
		mode, err := ModeOf(x.Volume.AccessMode)
		if err != nil {
			return controller.Change{}, err
		}
		return controller.Change{Volume: &store.VolumeSpec{ID: cloud.VolumeID(x.Volume.Name), Mode: mode}}, nil
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

// ModeOf parses an access mode ("" means ReadWriteOnce).
func ModeOf(s string) (cloud.AccessMode, error) {
	switch s {
	case "", "ReadWriteOnce":
		return cloud.Exclusive, nil
	case "ReadWriteMany", "ReadOnlyMany":
		return cloud.MultiNode, nil
	}
	return 0, fmt.Errorf("%w: unknown access mode %q (want ReadWriteOnce, ReadWriteMany or ReadOnlyMany)", controller.ErrInvalid, s)
}

func modeName(m cloud.AccessMode) string {
	if m == cloud.MultiNode {
		return "ReadWriteMany"
	}
	return "ReadWriteOnce"
}

func (s *service) Delete(_ context.Context, req *messages.DeleteRequest) (*messages.DeleteResponse, error) {
	kind, err := kindOf(req.Kind)
	if err != nil {
		return nil, toStatus(err)
	}
	if err := s.exists(kind, req.Name); err != nil {
		return nil, toStatus(err)
	}
	switch kind {
	case "volume":
		// A desired volume's disk may hold data: it must not look like the
		// empty leftover of an apply that never committed (provision.go).
		id := cloud.VolumeID(req.Name)
		if s.nodes.Uncommitted(id) {
			if err := s.nodes.CommitVolume(id); err != nil {
				return nil, toStatus(fmt.Errorf("volume %q: its disk is still tagged uncommitted and the tag cannot be removed, so it is not deleted (try again): %w", id, err))
			}
		}
		err = s.ctl.DeleteVolume(id)
	case "node":
		err = s.ctl.DeleteNode(cloud.NodeName(req.Name))
	default:
		err = s.ctl.DeleteWorkload(req.Name)
	}
	return &messages.DeleteResponse{}, toStatus(err)
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
	info := &messages.VolumeInfo{Spec: &messages.VolumeDoc{Name: string(v.ID), AccessMode: s.shownMode(v)}}
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
