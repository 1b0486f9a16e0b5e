package process

import (
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/messages"
)

// loopClient serves e's API on a free loopback port until the test ends
// and returns a client of it, and the context of a call (bounded, with
// the token).
func loopClient(t *testing.T, e *Embedded) (messages.TetherClient, func() context.Context, func(...*messages.Document) error) {
	t.Helper()
	token, err := api.LoadOrCreateToken(e.cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := api.Serve("127.0.0.1:0", token, e.Controller, e.Account, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Stop(); err != nil {
			t.Error(err)
		}
	})
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := func() context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		t.Cleanup(cancel)
		return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
	}
	c := messages.NewTetherClient(conn)
	apply := func(docs ...*messages.Document) error {
		_, err := c.Apply(ctx(), &messages.ApplyRequest{Documents: docs})
		return err
	}
	return c, ctx, apply
}

func volumeDoc(name, mode string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: name, AccessMode: mode}}}
}

func workloadDoc(name string, n cloud.NodeName, vol cloud.VolumeID, readOnly bool) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: name, Node: string(n),
		Volumes: []*messages.WorkloadVolumeDoc{{Name: string(vol), ReadOnly: readOnly}}}}}
}

// mountOpts returns the per-mount and superblock options that
// /proc/self/mountinfo shows for the mount at point.
func mountOpts(t *testing.T, point string) (opts, super []string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		sep := slices.Index(f, "-")
		if sep < 6 || sep+3 >= len(f) || f[4] != point { // tests' paths need no unescaping
			continue
		}
		opts, super = strings.Split(f[5], ","), strings.Split(f[sep+3], ",")
	}
	if opts == nil {
		t.Fatalf("%s is not in the mount table", point)
	}
	return opts, super
}

// A ReadOnlyMany volume on the loop cloud: its disk is made with ext4 on
// it, attached to both nodes' instances at once, mounted read-only on
// both (whether the workload asked for read-only or not) with what the
// disk holds, every write refused with EROFS; deleting the workloads
// unmounts and detaches it from both. A ReadWriteMany volume is refused,
// applied new or over the ReadOnlyMany disk a deleted volume left.
func TestLoopReadOnlyMany(t *testing.T) {
	const shared = cloud.VolumeID("shared")
	dir := newLoopDir(t)
	cfg := loopConfig(t, dir)
	cfg.Durable = true
	e := startLoop(t, cfg)
	c, ctx, apply := loopClient(t, e)

	err := apply(volumeDoc("rwx", "ReadWriteMany"))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `volume "rwx" is ReadWriteMany`) ||
		!strings.Contains(err.Error(), "not a cluster filesystem") {
		t.Fatalf("a ReadWriteMany volume: %v; want InvalidArgument saying why", err)
	}
	if vols, _ := e.Store.Volumes(); len(vols) != 0 || len(e.Account.Inventory().Volumes) != 0 {
		t.Fatalf("a refused apply left volumes %v, disks %v", vols, e.Account.Inventory().Volumes)
	}

	// The disk first: its content is put on its image while nothing is
	// attached, as an operator would fill a disk before sharing it.
	if err := apply(volumeDoc(string(shared), "ReadOnlyMany")); err != nil {
		t.Fatal(err)
	}
	img, err := e.Account.(*loopAccount).ImagePath(shared)
	if err != nil {
		t.Fatal(err)
	}
	uuid := fsUUID(t, e, shared)
	if uuid == "" {
		t.Fatalf("the ReadOnlyMany disk's image %s carries no filesystem", img)
	}
	content := filepath.Join(t.TempDir(), "content")
	if err := os.WriteFile(content, []byte("shared data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("debugfs", "-w", "-R", "write "+content+" data.txt", img).CombinedOutput(); err != nil {
		t.Fatalf("debugfs write: %v: %s", err, out)
	}
	want := sha256.Sum256([]byte("shared data\n"))

	// n1's workload asks read-write, n2's read-only: both get it read-only.
	if err := apply(workloadDoc("app-1", "n1", shared, false), workloadDoc("app-2", "n2", shared, true)); err != nil {
		t.Fatal(err)
	}
	paths := map[cloud.NodeName]string{"n1": podPath(t, e, "n1", "app-1", shared), "n2": podPath(t, e, "n2", "app-2", shared)}
	testkit.Eventually(t, 60*time.Second, func() bool {
		if len(e.Account.Attachments()[shared]) != 2 {
			return false
		}
		return mountedOn(e, "n1", paths["n1"]) && mountedOn(e, "n2", paths["n2"])
	}, "shared attached to n1 and n2 and mounted on both")
	var insts []cloud.InstanceID
	for _, n := range []cloud.NodeName{"n1", "n2"} {
		inst, _ := e.Account.InstanceOf(n)
		insts = append(insts, inst)
	}
	slices.Sort(insts)
	if got := e.Account.Attachments()[shared]; !slices.Equal(got, insts) {
		t.Errorf("shared is attached to %v, want %v", got, insts)
	}
	for n, p := range paths {
		opts, super := mountOpts(t, p)
		if !slices.Contains(opts, "ro") || !slices.Contains(super, "ro") {
			t.Errorf("%s: %s is mounted %q (super %q), want read-only", n, p, opts, super)
		}
		b, err := os.ReadFile(filepath.Join(p, "data.txt"))
		if err != nil || sha256.Sum256(b) != want {
			t.Errorf("%s: data.txt = %q, %v; want the disk's content", n, b, err)
		}
		if err := os.WriteFile(filepath.Join(p, "probe"), []byte("x"), 0o600); !errors.Is(err, unix.EROFS) {
			t.Errorf("%s: a write under %s: %v, want EROFS", n, p, err)
		}
	}
	res, err := c.Get(ctx(), &messages.GetRequest{Kind: "volume", Name: string(shared)})
	if err != nil || res.Volumes[0].Spec.AccessMode != "ReadOnlyMany" {
		t.Errorf("get volume shared = %v, %v; want ReadOnlyMany", res, err)
	}
	err = apply(volumeDoc(string(shared), "ReadWriteMany"))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "is ReadOnlyMany and cannot become ReadWriteMany") {
		t.Errorf("shared applied as ReadWriteMany: %v; want refused", err)
	}

	for _, w := range []string{"app-1", "app-2"} {
		if _, err := c.Delete(ctx(), &messages.DeleteRequest{Kind: "workload", Name: w}); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 60*time.Second, func() bool {
		return len(e.Account.Attachments()[shared]) == 0 && !exists(paths["n1"]) && !exists(paths["n2"])
	}, "shared unmounted and detached from both nodes")
	if _, err := c.Delete(ctx(), &messages.DeleteRequest{Kind: "volume", Name: string(shared)}); err != nil {
		t.Fatal(err)
	}
	err = apply(volumeDoc(string(shared), "ReadWriteMany"))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "left in the cloud by a deleted volume, ReadOnlyMany") {
		t.Errorf("ReadWriteMany over a deleted ReadOnlyMany volume's disk: %v; want refused", err)
	}
	if got := fsUUID(t, e, shared); got != uuid {
		t.Errorf("the disk's filesystem changed: UUID %s, was %s", got, uuid)
	}
}

// --rebuild-store takes a ReadOnlyMany disk back as ReadOnlyMany (the
// loop cloud says its disk is read-only) and its workload read-only (its
// mount says so), without unmounting it.
func TestLoopReadOnlyManyRebuilt(t *testing.T) {
	const shared = cloud.VolumeID("shared")
	dir := newLoopDir(t)
	cfg := loopConfig(t, dir)
	cfg.Durable = true
	e := startLoop(t, cfg)
	_, _, apply := loopClient(t, e)
	if err := apply(volumeDoc(string(shared), "ReadOnlyMany"), workloadDoc("app", "n1", shared, false)); err != nil {
		t.Fatal(err)
	}
	p := podPath(t, e, "n1", "app", shared)
	testkit.Eventually(t, 60*time.Second, func() bool { return mountedOn(e, "n1", p) }, "shared mounted on n1")
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, StoreFile)
	if err := os.Rename(db, db+".gone"); err != nil {
		t.Fatal(err)
	}
	cfg.RebuildStore = true
	e = startLoop(t, cfg)
	if v, ok, err := e.Store.Volume(shared); err != nil || !ok || v.Mode != cloud.MultiNode || !v.ReadOnly {
		t.Errorf("rebuilt volume %+v, %v, %v; want ReadOnlyMany", v, ok, err)
	}
	if w, ok, err := e.Store.Workload("app"); err != nil || !ok || !slices.Equal(w.ReadOnly, []cloud.VolumeID{shared}) {
		t.Errorf("rebuilt workload %+v, %v, %v; want it using shared read-only", w, ok, err)
	}
	if !mountedOn(e, "n1", p) {
		t.Error("the rebuild unmounted the workload's volume")
	}
}
