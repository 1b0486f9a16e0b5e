package remote

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/files/names"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/messages"
)

// simCloud is what other processes need of the sim cloud: bootstrap/operator/api's
// Nodes and agent.SimDevices' cloud (copied: cloud/ imports neither). Both
// the sim and the Client have it, with the same signatures.
type simCloud interface {
	InstanceOf(node cloud.NodeName) (cloud.InstanceID, bool)
	Running(inst cloud.InstanceID) bool
	Terminate(inst cloud.InstanceID) error
	Start(inst cloud.InstanceID) error
	AddInstanceChecked(node cloud.NodeName) (cloud.InstanceID, error)
	CreateVolumesUncommitted(vols []cloud.VolumeSpec) error
	CommitVolumes(ids []cloud.VolumeID) error
	CommitVolume(id cloud.VolumeID) error
	Uncommitted(id cloud.VolumeID) bool
	Volume(id cloud.VolumeID) (mode cloud.AccessMode, attachedTo []cloud.InstanceID, ok bool)
	Disks(ids []cloud.VolumeID) (map[cloud.VolumeID]cloud.Disk, error)
	DeleteVolume(id cloud.VolumeID) error
	Delete(inst cloud.InstanceID) error
	DeviceSource(inst cloud.InstanceID, devicePath string) (string, error)
	ContentDir() string
	ConsoleDetach(vol cloud.VolumeID, inst cloud.InstanceID) error
}

var (
	_ simCloud = (*sim.Cloud)(nil)
	_ simCloud = (*Client)(nil)
)

// newSimRig serves c with ServeSim (watches queueing queue changes) on
// loopback, with a client; both stop in t.Cleanup.
func newSimRig(t *testing.T, c *sim.Cloud, queue int) *rig {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveSim(lis, c, queue)
	t.Cleanup(srv.Stop)
	return &rig{sim: c, srv: srv, cl: dial(t, lis.Addr().String()), addr: lis.Addr().String()}
}

// dial connects a client to addr, closed in t.Cleanup.
func dial(t *testing.T, addr string, opts ...grpc.DialOption) *Client {
	t.Helper()
	cl, err := Dial(addr, append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

func TestModesNumberedAsCloud(t *testing.T) {
	if messages.AccessMode_ACCESS_MODE_EXCLUSIVE != messages.AccessMode(cloud.Exclusive) ||
		messages.AccessMode_ACCESS_MODE_MULTI_NODE != messages.AccessMode(cloud.MultiNode) {
		t.Fatal("messages.AccessMode and cloud.AccessMode number the modes differently")
	}
}

// TestAdminMatchesSim: every admin method through the wire answers as the
// sim does, on a durable sim with content, as tether cloud serve runs it.
func TestAdminMatchesSim(t *testing.T) {
	dir := t.TempDir()
	c, err := sim.Open(sim.Config{StatePath: filepath.Join(dir, "state.json"), ContentDir: filepath.Join(dir, "content")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	r := newSimRig(t, c, DefaultWatchQueue)
	cl := r.cl

	i1, err := cl.AddInstanceChecked("n1")
	if want, _ := c.InstanceOf("n1"); err != nil || i1 != want || i1 == "" {
		t.Fatalf("AddInstanceChecked(n1) = %q, %v; the sim has %q", i1, err, want)
	}
	if again, err := cl.AddInstanceChecked("n1"); err != nil || again != i1 {
		t.Errorf("AddInstanceChecked(n1) again = %q, %v; want %q", again, err, i1)
	}
	i2 := c.AddInstance("n2")
	if got, ok := cl.InstanceOf("n2"); !ok || got != i2 {
		t.Errorf("InstanceOf(n2) = %q, %v; want %q", got, ok, i2)
	}
	if got, ok := cl.InstanceOf("n9"); ok || got != "" {
		t.Errorf("InstanceOf(n9) = %q, %v; want none", got, ok)
	}

	// Instances: terminate, start, delete.
	mustNil(t, cl.Terminate(i2))
	if cl.Running(i2) || c.Running(i2) {
		t.Error("terminated instance running")
	}
	mustNil(t, cl.Start(i2))
	if !cl.Running(i2) || !c.Running(i2) {
		t.Error("started instance not running")
	}
	if cl.Running("i-unknown") {
		t.Error("Running(unknown) = true")
	}

	// Volumes: created uncommitted (an odd mode crosses unchanged), then
	// committed one way and the other.
	specs := []cloud.VolumeSpec{{ID: "a", Mode: cloud.Exclusive}, {ID: "b", Mode: cloud.MultiNode}, {ID: "odd", Mode: cloud.AccessMode(7)}}
	mustNil(t, cl.CreateVolumesUncommitted(specs))
	for _, s := range specs {
		if !cl.Uncommitted(s.ID) || !c.Uncommitted(s.ID) {
			t.Errorf("%s not tagged uncommitted", s.ID)
		}
		mode, insts, ok := cl.Volume(s.ID)
		wm, wi, wok := c.Volume(s.ID)
		if mode != s.Mode || !reflect.DeepEqual([]any{mode, insts, ok}, []any{wm, wi, wok}) {
			t.Errorf("Volume(%s) = %v, %v, %v; the sim says %v, %v, %v (created %v)", s.ID, mode, insts, ok, wm, wi, wok, s.Mode)
		}
	}
	mustNil(t, cl.CommitVolume("a"))
	mustNil(t, cl.CommitVolumes([]cloud.VolumeID{"b", "odd"}))
	for _, s := range specs {
		if cl.Uncommitted(s.ID) || c.Uncommitted(s.ID) {
			t.Errorf("%s still tagged after commit", s.ID)
		}
	}
	if _, _, ok := cl.Volume("nope"); ok {
		t.Error("Volume(nope) found")
	}

	// Attachments, device sources, content.
	ctx := t.Context()
	devA, err := cl.Attach(ctx, "a", i1)
	mustNil(t, err)
	devB, err := cl.Attach(ctx, "b", i2)
	mustNil(t, err)
	_, err = cl.Attach(ctx, "b", i1)
	mustNil(t, err)
	got, err := cl.Attachments()
	if want := c.Attachments(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Attachments = %v, %v; the sim says %v", got, err, want)
	}
	if _, insts, _ := cl.Volume("b"); !reflect.DeepEqual(insts, []cloud.InstanceID{i1, i2}) {
		t.Errorf("Volume(b) attached to %v, want [%s %s]", insts, i1, i2)
	}
	// Disks says of each what Volume and Uncommitted say, in one call:
	// attached, committed, tagged, missing.
	mustNil(t, cl.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "tagged", Mode: cloud.Exclusive}}))
	ask := []cloud.VolumeID{"a", "b", "odd", "tagged", "nope"}
	disks, err := cl.Disks(ask)
	mustNil(t, err)
	direct, err := c.Disks(ask)
	mustNil(t, err)
	if !reflect.DeepEqual(disks, direct) || len(disks) != 4 {
		t.Errorf("Disks = %v; the sim says %v (want 4 disks)", disks, direct)
	}
	for _, id := range ask {
		mode, insts, ok := c.Volume(id)
		d, found := disks[id]
		if found != ok || d.Mode != mode || !reflect.DeepEqual(d.AttachedTo, insts) || d.Uncommitted != c.Uncommitted(id) {
			t.Errorf("Disks[%s] = %+v (found %v); Volume says %v, %v, %v, Uncommitted %v", id, d, found, mode, insts, ok, c.Uncommitted(id))
		}
	}
	if !disks["tagged"].Uncommitted || disks["b"].Uncommitted || len(disks["b"].AttachedTo) != 2 {
		t.Errorf("Disks lost a tag or an attachment: %+v", disks)
	}
	if got, want := cl.ContentDir(), c.ContentDir(); got != want || got == "" {
		t.Errorf("ContentDir = %q, the sim says %q", got, want)
	}
	for _, d := range []struct {
		inst cloud.InstanceID
		dev  string
	}{{i1, devA}, {i2, devB}} {
		src, err := cl.DeviceSource(d.inst, d.dev)
		want, werr := c.DeviceSource(d.inst, d.dev)
		if err != nil || werr != nil || src != want {
			t.Errorf("DeviceSource(%s, %s) = %q, %v; the sim says %q, %v", d.inst, d.dev, src, err, want, werr)
		}
	}

	// Errors keep their class, their sentinels and the sim's text.
	errTests := []struct {
		name string
		call func(simCloud) error
		want []error
	}{
		{"delete an attached volume", func(s simCloud) error { return s.DeleteVolume("a") }, []error{sim.ErrVolumeInUse}},
		{"delete an unknown volume", func(s simCloud) error { return s.DeleteVolume("nope") }, []error{cloud.ErrNotFound}},
		{"commit an unknown volume", func(s simCloud) error { return s.CommitVolume("nope") }, []error{cloud.ErrNotFound}},
		{"commit unknown volumes", func(s simCloud) error { return s.CommitVolumes([]cloud.VolumeID{"a", "nope"}) }, []error{cloud.ErrNotFound}},
		{"terminate an unknown instance", func(s simCloud) error { return s.Terminate("i-unknown") }, []error{cloud.ErrNotFound}},
		{"start an unknown instance", func(s simCloud) error { return s.Start("i-unknown") }, []error{cloud.ErrNotFound}},
		{"delete an unknown instance", func(s simCloud) error { return s.Delete("i-unknown") }, []error{cloud.ErrNotFound}},
		{"an invalid volume name", func(s simCloud) error {
			return s.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "../x", Mode: cloud.Exclusive}})
		}, []error{names.ErrInvalidName}},
		{"no volume at that device", func(s simCloud) error { _, err := s.DeviceSource(i1, "/dev/xvdzz"); return err }, []error{cloud.ErrNotFound}},
		{"console detach of an unknown volume", func(s simCloud) error { return s.ConsoleDetach("nope", i1) }, []error{cloud.ErrNotFound}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			err, direct := tt.call(cl), tt.call(c)
			if err == nil || direct == nil || err.Error() != direct.Error() {
				t.Fatalf("err = %v, want the sim's %v", err, direct)
			}
			for _, want := range tt.want {
				if !errors.Is(err, want) {
					t.Errorf("err = %v, want one wrapping %v", err, want)
				}
			}
			if got, want := cloud.Classify(err), cloud.Classify(direct); got != want {
				t.Errorf("Classify = %v, the sim's is %v", got, want)
			}
		})
	}

	// A console detach removes one attachment on the cloud's account.
	mustNil(t, cl.ConsoleDetach("b", i2))
	if _, insts, _ := c.Volume("b"); !reflect.DeepEqual(insts, []cloud.InstanceID{i1}) {
		t.Errorf("after a console detach of b from %s: attached to %v, want [%s]", i2, insts, i1)
	}
	mustNil(t, cl.ConsoleDetach("b", i2)) // not attached there: nothing to do

	// What the errors refused did not happen; the rest does.
	mustNil(t, cl.Detach(ctx, "a", i1))
	mustNil(t, cl.DeleteVolume("a"))
	if _, _, ok := c.Volume("a"); ok {
		t.Error("deleted volume still there")
	}
	mustNil(t, cl.Delete(i2))
	if _, ok := c.InstanceOf("n2"); ok {
		t.Error("deleted instance still backs n2")
	}
	if got := c.Attachments(); !reflect.DeepEqual(got, map[cloud.VolumeID][]cloud.InstanceID{"b": {i1}}) {
		t.Errorf("attachments at the end %v, want b on %s", got, i1)
	}
}

// TestAdminNotServed: a plain Serve has no admin side: calls fail at once,
// as having had no effect.
func TestAdminNotServed(t *testing.T) {
	r := newRig(t, sim.Config{})
	// A server without the method (here without the admin side at all,
	// as a cloud service from before Disks lacks that one) answers
	// Unimplemented: Disks says so, for its caller to ask disk by disk.
	if _, err := r.cl.Disks([]cloud.VolumeID{"a"}); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Disks on a plain Serve: %v, want one wrapping errors.ErrUnsupported", err)
	}
	err := r.cl.Terminate("i-1")
	if !errors.Is(err, cloud.ErrTerminal) || errors.Is(err, ErrUnknownOutcome) {
		t.Errorf("Terminate on a plain Serve: %v, want one wrapping cloud.ErrTerminal", err)
	}
	if _, ok := r.cl.InstanceOf("n1"); ok {
		t.Error("InstanceOf on a plain Serve found an instance")
	}
}

// TestAdminTimeout: with the server gone, an admin call ends after
// AdminTimeout with an unknown outcome.
func TestAdminTimeout(t *testing.T) {
	r := newSimRig(t, sim.New(sim.Config{}), DefaultWatchQueue)
	r.cl.AdminTimeout = 200 * time.Millisecond
	r.srv.Stop()
	start := time.Now()
	_, err := r.cl.AddInstanceChecked("n1")
	if !errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want an unknown outcome", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %v, AdminTimeout is 200ms", d)
	}
	if r.cl.Running("i-1") {
		t.Error("Running with the server gone = true")
	}
}

func mustNil(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
