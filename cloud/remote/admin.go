package remote

// The sim cloud's admin side (messages.SimAdmin), but for Watch
// (watch.go): the server's handlers and the Client's methods, which have
// the signatures of *sim.Cloud's so that a Client stands in for it in
// another process (cloud.Provisioner, agent.SimDevices).

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// DefaultAdminTimeout is the default of Client.AdminTimeout.
const DefaultAdminTimeout = 10 * time.Second

// admin implements messages.SimAdminServer over a sim cloud.
type admin struct {
	messages.UnimplementedSimAdminServer
	c       *sim.Cloud
	queue   int             // of each watch (watch.go)
	senders *sync.WaitGroup // the Server's
	watches atomic.Int32    // watches being served
}

func done(err error) (*messages.SimDone, error) {
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.SimDone{}, nil
}

func (a *admin) InstanceOf(_ context.Context, r *messages.SimNodeRequest) (*messages.SimInstanceOfResponse, error) {
	id, ok := a.c.InstanceOf(cloud.NodeName(r.GetNode()))
	return &messages.SimInstanceOfResponse{InstanceId: string(id), Found: ok}, nil
}

func (a *admin) Running(_ context.Context, r *messages.SimInstanceRequest) (*messages.SimRunningResponse, error) {
	return &messages.SimRunningResponse{Running: a.c.Running(cloud.InstanceID(r.GetInstanceId()))}, nil
}

func (a *admin) Terminate(_ context.Context, r *messages.SimInstanceRequest) (*messages.SimDone, error) {
	return done(a.c.Terminate(cloud.InstanceID(r.GetInstanceId())))
}

func (a *admin) Start(_ context.Context, r *messages.SimInstanceRequest) (*messages.SimDone, error) {
	return done(a.c.Start(cloud.InstanceID(r.GetInstanceId())))
}

func (a *admin) Delete(_ context.Context, r *messages.SimInstanceRequest) (*messages.SimDone, error) {
	return done(a.c.Delete(cloud.InstanceID(r.GetInstanceId())))
}

func (a *admin) ConsoleDetach(_ context.Context, r *messages.SimConsoleDetachRequest) (*messages.SimDone, error) {
	return done(a.c.ConsoleDetach(cloud.VolumeID(r.GetVolumeId()), cloud.InstanceID(r.GetInstanceId())))
}

func (a *admin) AddInstanceChecked(_ context.Context, r *messages.SimNodeRequest) (*messages.SimAddInstanceResponse, error) {
	id, err := a.c.AddInstanceChecked(cloud.NodeName(r.GetNode()))
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.SimAddInstanceResponse{InstanceId: string(id)}, nil
}

func (a *admin) CreateVolumesUncommitted(_ context.Context, r *messages.SimCreateVolumesRequest) (*messages.SimDone, error) {
	specs := make([]cloud.VolumeSpec, len(r.GetVolumes()))
	for i, v := range r.GetVolumes() {
		specs[i] = cloud.VolumeSpec{ID: cloud.VolumeID(v.GetVolumeId()), Mode: modeOf(v.GetMode())}
	}
	return done(a.c.CreateVolumesUncommitted(specs))
}

func (a *admin) CommitVolumes(_ context.Context, r *messages.SimVolumesRequest) (*messages.SimDone, error) {
	return done(a.c.CommitVolumes(idsOf[cloud.VolumeID](r.GetVolumeIds())))
}

func (a *admin) CommitVolume(_ context.Context, r *messages.SimVolumeRequest) (*messages.SimDone, error) {
	return done(a.c.CommitVolume(cloud.VolumeID(r.GetVolumeId())))
}

func (a *admin) Uncommitted(_ context.Context, r *messages.SimVolumeRequest) (*messages.SimUncommittedResponse, error) {
	return &messages.SimUncommittedResponse{Uncommitted: a.c.Uncommitted(cloud.VolumeID(r.GetVolumeId()))}, nil
}

func (a *admin) Volume(_ context.Context, r *messages.SimVolumeRequest) (*messages.SimVolumeResponse, error) {
	mode, insts, ok := a.c.Volume(cloud.VolumeID(r.GetVolumeId()))
	return &messages.SimVolumeResponse{Found: ok, Mode: modeMsg(mode), AttachedTo: strs(insts)}, nil
}

func (a *admin) Disks(_ context.Context, r *messages.SimVolumesRequest) (*messages.SimDisksResponse, error) {
	ids := idsOf[cloud.VolumeID](r.GetVolumeIds())
	disks, err := a.c.Disks(ids)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &messages.SimDisksResponse{Disks: make([]*messages.SimDisk, len(ids))}
	for i, id := range ids {
		d, ok := disks[id]
		out.Disks[i] = &messages.SimDisk{VolumeId: string(id), Found: ok, Mode: modeMsg(d.Mode), AttachedTo: strs(d.AttachedTo), Uncommitted: d.Uncommitted}
	}
	return out, nil
}

func (a *admin) DeleteVolume(_ context.Context, r *messages.SimVolumeRequest) (*messages.SimDone, error) {
	return done(a.c.DeleteVolume(cloud.VolumeID(r.GetVolumeId())))
}

func (a *admin) DeviceSource(_ context.Context, r *messages.SimDeviceSourceRequest) (*messages.SimDeviceSourceResponse, error) {
	dir, err := a.c.DeviceSource(cloud.InstanceID(r.GetInstanceId()), r.GetDevicePath())
	if err != nil {
		return nil, toStatus(err)
	}
	return &messages.SimDeviceSourceResponse{Dir: dir}, nil
}

func (a *admin) ContentDir(context.Context, *messages.SimContentDirRequest) (*messages.SimContentDirResponse, error) {
	return &messages.SimContentDirResponse{Dir: a.c.ContentDir()}, nil
}

func (a *admin) Attachments(context.Context, *messages.SimAttachmentsRequest) (*messages.SimAttachmentsResponse, error) {
	att := a.c.Attachments()
	out := &messages.SimAttachmentsResponse{Volumes: make(map[string]*messages.InstanceIDs, len(att))}
	for v, insts := range att {
		out.Volumes[string(v)] = &messages.InstanceIDs{InstanceIds: strs(insts)}
	}
	return out, nil
}

// adminCall runs one admin RPC of method, bounded by c.AdminTimeout,
// waiting for the connection to be ready within it (a cloud process
// restarting is waited for, not failed at once). Its errors are call's.
func adminCall[R any](c *Client, method string, send func(context.Context, ...grpc.CallOption) (R, error)) (R, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.AdminTimeout)
	defer cancel()
	return call(ctx, method, func(ctx context.Context) (R, error) { return send(ctx, grpc.WaitForReady(true)) })
}

// InstanceOf is sim.Cloud.InstanceOf. A failed call (see AdminTimeout)
// reads as no instance.
func (c *Client) InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool) {
	r, err := adminCall(c, "instance_of", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimInstanceOfResponse, error) {
		return c.admin.InstanceOf(ctx, &messages.SimNodeRequest{Node: string(node)}, o...)
	})
	if err != nil || !r.GetFound() {
		return "", false
	}
	return cloud.InstanceID(r.GetInstanceId()), true
}

// Running is sim.Cloud.Running. A failed call reads as not running.
func (c *Client) Running(inst cloud.InstanceID) bool {
	r, err := adminCall(c, "running", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimRunningResponse, error) {
		return c.admin.Running(ctx, &messages.SimInstanceRequest{InstanceId: string(inst)}, o...)
	})
	return err == nil && r.GetRunning()
}

// Terminate is sim.Cloud.Terminate.
func (c *Client) Terminate(inst cloud.InstanceID) error {
	return c.instanceCall("terminate", c.admin.Terminate, inst)
}

// Start is sim.Cloud.Start.
func (c *Client) Start(inst cloud.InstanceID) error {
	return c.instanceCall("start", c.admin.Start, inst)
}

// ConsoleDetach is sim.Cloud.ConsoleDetach.
func (c *Client) ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error {
	_, err := adminCall(c, "console detach", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDone, error) {
		return c.admin.ConsoleDetach(ctx, &messages.SimConsoleDetachRequest{VolumeId: string(vol), InstanceId: string(inst)}, o...)
	})
	return err
}

// Delete is sim.Cloud.Delete.
func (c *Client) Delete(inst cloud.InstanceID) error {
	return c.instanceCall("delete", c.admin.Delete, inst)
}

type instanceRPC = func(context.Context, *messages.SimInstanceRequest, ...grpc.CallOption) (*messages.SimDone, error)

func (c *Client) instanceCall(method string, rpc instanceRPC, inst cloud.InstanceID) error {
	_, err := adminCall(c, method, func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDone, error) {
		return rpc(ctx, &messages.SimInstanceRequest{InstanceId: string(inst)}, o...)
	})
	return err
}

// AddInstanceChecked is sim.Cloud.AddInstanceChecked.
func (c *Client) AddInstanceChecked(node cloud.NodeName) (cloud.InstanceID, error) {
	r, err := adminCall(c, "add_instance", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimAddInstanceResponse, error) {
		return c.admin.AddInstanceChecked(ctx, &messages.SimNodeRequest{Node: string(node)}, o...)
	})
	if err != nil {
		return "", err
	}
	return cloud.InstanceID(r.GetInstanceId()), nil
}

// CreateVolumesUncommitted is sim.Cloud.CreateVolumesUncommitted.
func (c *Client) CreateVolumesUncommitted(vols []cloud.VolumeSpec) error {
	req := &messages.SimCreateVolumesRequest{Volumes: make([]*messages.SimVolumeSpec, len(vols))}
	for i, v := range vols {
		req.Volumes[i] = &messages.SimVolumeSpec{VolumeId: string(v.ID), Mode: modeMsg(v.Mode)}
	}
	_, err := adminCall(c, "create_volumes_uncommitted", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDone, error) {
		return c.admin.CreateVolumesUncommitted(ctx, req, o...)
	})
	return err
}

// CommitVolumes is sim.Cloud.CommitVolumes.
func (c *Client) CommitVolumes(ids []cloud.VolumeID) error {
	_, err := adminCall(c, "commit_volumes", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDone, error) {
		return c.admin.CommitVolumes(ctx, &messages.SimVolumesRequest{VolumeIds: strs(ids)}, o...)
	})
	return err
}

// CommitVolume is sim.Cloud.CommitVolume.
func (c *Client) CommitVolume(id cloud.VolumeID) error {
	return c.volumeCall("commit_volume", c.admin.CommitVolume, id)
}

// DeleteVolume is sim.Cloud.DeleteVolume: an attached volume is refused
// with an error wrapping sim.ErrVolumeInUse.
func (c *Client) DeleteVolume(id cloud.VolumeID) error {
	return c.volumeCall("delete_volume", c.admin.DeleteVolume, id)
}

type volumeRPC = func(context.Context, *messages.SimVolumeRequest, ...grpc.CallOption) (*messages.SimDone, error)

func (c *Client) volumeCall(method string, rpc volumeRPC, id cloud.VolumeID) error {
	_, err := adminCall(c, method, func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDone, error) {
		return rpc(ctx, &messages.SimVolumeRequest{VolumeId: string(id)}, o...)
	})
	return err
}

// Uncommitted is sim.Cloud.Uncommitted. A failed call reads as untagged
// (the tagged disks are the ones that may be deleted).
func (c *Client) Uncommitted(id cloud.VolumeID) bool {
	r, err := adminCall(c, "uncommitted", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimUncommittedResponse, error) {
		return c.admin.Uncommitted(ctx, &messages.SimVolumeRequest{VolumeId: string(id)}, o...)
	})
	return err == nil && r.GetUncommitted()
}

// disksPerCall bounds the disks one Disks call asks about: a call's
// answer stays well within gRPC's 4 MiB message bound.
const disksPerCall = 10000

// Disks is sim.Cloud.Disks, disksPerCall at a time. Unlike Volume and
// Uncommitted, a failed call is an error: an apply must not plan from a
// cloud it could not read. A cloud service from before Disks answers
// Unimplemented: the error then wraps errors.ErrUnsupported, and the
// caller asks disk by disk (a rolling upgrade).
func (c *Client) Disks(ids []cloud.VolumeID) (map[cloud.VolumeID]cloud.Disk, error) {
	out := make(map[cloud.VolumeID]cloud.Disk, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), disksPerCall)
		var raw error
		r, err := adminCall(c, "disks", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDisksResponse, error) {
			r, err := c.admin.Disks(ctx, &messages.SimVolumesRequest{VolumeIds: strs(ids[:n])}, o...)
			raw = err
			return r, err
		})
		if err != nil {
			return nil, unsupported(raw, err, "Disks (an older tether cloud serve)")
		}
		for _, d := range r.GetDisks() {
			if d.GetFound() {
				out[cloud.VolumeID(d.GetVolumeId())] = cloud.Disk{Mode: modeOf(d.GetMode()), AttachedTo: idsOf[cloud.InstanceID](d.GetAttachedTo()), Uncommitted: d.GetUncommitted()}
			}
		}
		ids = ids[n:]
	}
	return out, nil
}

// Volume is sim.Cloud.Volume. A failed call reads as no such volume.
func (c *Client) Volume(id cloud.VolumeID) (mode cloud.AccessMode, attachedTo []cloud.InstanceID, ok bool) {
	r, err := adminCall(c, "volume", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimVolumeResponse, error) {
		return c.admin.Volume(ctx, &messages.SimVolumeRequest{VolumeId: string(id)}, o...)
	})
	if err != nil || !r.GetFound() {
		return 0, nil, false
	}
	return modeOf(r.GetMode()), idsOf[cloud.InstanceID](r.GetAttachedTo()), true
}

// DeviceSource is sim.Cloud.DeviceSource: the path is the cloud process's,
// valid on its machine.
func (c *Client) DeviceSource(inst cloud.InstanceID, devicePath string) (string, error) {
	r, err := adminCall(c, "device_source", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimDeviceSourceResponse, error) {
		return c.admin.DeviceSource(ctx, &messages.SimDeviceSourceRequest{InstanceId: string(inst), DevicePath: devicePath}, o...)
	})
	if err != nil {
		return "", err
	}
	return r.GetDir(), nil
}

// ContentDir is sim.Cloud.ContentDir. A failed call reads as "" (no
// content: every source checked against it is refused).
func (c *Client) ContentDir() string {
	r, err := adminCall(c, "content_dir", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimContentDirResponse, error) {
		return c.admin.ContentDir(ctx, &messages.SimContentDirRequest{}, o...)
	})
	if err != nil {
		return ""
	}
	return r.GetDir()
}

// Attachments is sim.Cloud.Attachments, with an error: it is what
// checkers read, and a failed call must not read as "nothing attached".
func (c *Client) Attachments() (map[cloud.VolumeID][]cloud.InstanceID, error) {
	r, err := adminCall(c, "attachments", func(ctx context.Context, o ...grpc.CallOption) (*messages.SimAttachmentsResponse, error) {
		return c.admin.Attachments(ctx, &messages.SimAttachmentsRequest{}, o...)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.VolumeID][]cloud.InstanceID, len(r.GetVolumes()))
	for v, insts := range r.GetVolumes() {
		out[cloud.VolumeID(v)] = idsOf[cloud.InstanceID](insts.GetInstanceIds())
	}
	return out, nil
}

// modeMsg and modeOf convert access modes, which the enum numbers as
// cloud does (TestModesNumberedAsCloud); a mode neither knows crosses the
// wire unchanged (proto3 enums are open), as the sim keeps it.
func modeMsg(m cloud.AccessMode) messages.AccessMode { return messages.AccessMode(m) }
func modeOf(m messages.AccessMode) cloud.AccessMode  { return cloud.AccessMode(m) }

func strs[S ~string](ids []S) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// idsOf converts IDs from the wire; none is nil, as the sim returns none.
func idsOf[S ~string](ids []string) []S {
	if len(ids) == 0 {
		return nil
	}
	out := make([]S, len(ids))
	for i, id := range ids {
		out[i] = S(id)
	}
	return out
}
