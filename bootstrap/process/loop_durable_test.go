package process

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
	"github.com/tether/tether/node/mount"
)

// mountIdentities names each mount below dir by an identity a new mount at
// the same path would not have: its unique mount ID (Linux 6.8), else its
// ID in the mount table (reused only once freed).
func mountIdentities(t *testing.T, dir string) map[string]string {
	t.Helper()
	ids, err := mount.MountIDs()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for p, id := range ids {
		if !strings.HasPrefix(p, dir+"/") {
			continue
		}
		var st unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID_UNIQUE, &st) == nil && st.Mask&unix.STATX_MNT_ID_UNIQUE != 0 {
			out[p] = "unique " + strconv.FormatUint(st.Mnt_id, 10)
		} else {
			out[p] = "id " + strconv.Itoa(id)
		}
	}
	return out
}

// tether up --cloud loop stopped and started again on its data directory
// (devices and mounts outlive the process, as attachments and mounts
// outlive a real one) finds its volumes, attachments and mounts: the
// loop cloud reconciles its state at Open, the agents read their mounts
// back from the mount table without redoing them, the identity checks
// pass. Then the workload still moves with its data.
func TestLoopDurableRestartFindsEverything(t *testing.T) {
	dir := newLoopDir(t)
	cfg := loopConfig(t, dir)
	cfg.Durable = true
	e := startLoop(t, cfg)
	applyOn(t, e, "n1")
	sums := writeChecksummed(t, waitServed(t, e, "n1", uid, vol), files)
	before := mountIdentities(t, dir)
	if len(before) != 2 {
		t.Fatalf("mounts below %s: %v; want the stage and the publish", dir, before)
	}
	attached := e.Account.Attachments()
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}

	e = startLoop(t, cfg)
	if got := e.Account.Attachments(); !maps.EqualFunc(got, attached, slices.Equal[[]cloud.InstanceID]) {
		t.Fatalf("attachments after the restart %v, before %v", got, attached)
	}
	p := waitServed(t, e, "n1", uid, vol)
	testkit.Eventually(t, 30*time.Second, func() bool {
		st, err := e.Agents["n1"].Status(time.Second)
		return err == nil && st.Ready
	}, "n1's agent ready")
	if after := mountIdentities(t, dir); !maps.Equal(before, after) {
		t.Errorf("mounts redone across the restart: before %v, after %v", before, after)
	}
	verifyChecksums(t, p, sums)
	applyOn(t, e, "n2")
	verifyChecksums(t, waitServed(t, e, "n2", uid, vol), sums)
}

// The store's trust check works with the loop cloud: its owner tag (kept
// in loop-account.json) and its inventory show that a tether ran, so a
// start without tether.db refuses (and leaves the loop cloud's directory
// free for the next start); --rebuild-store rebuilds the desired state
// from the loop cloud and the mounts, which stay. A start with the sim
// cloud on the directory refuses too.
func TestLoopStoreTrust(t *testing.T) {
	dir := newLoopDir(t)
	cfg := loopConfig(t, dir)
	cfg.Durable = true
	e := startLoop(t, cfg)
	applyOn(t, e, "n1")
	p := waitServed(t, e, "n1", uid, vol)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, StoreFile)
	if err := os.Rename(db, db+".gone"); err != nil {
		t.Fatal(err)
	}
	_, err := StartEmbedded(cfg)
	if !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "the cloud account is tagged with identity") ||
		!strings.Contains(err.Error(), "the cloud holds 1 volumes (1 attachments) and 2 instances") {
		t.Fatalf("start without tether.db: %v; want a refusal naming the loop cloud's tag and inventory", err)
	}
	sc := cfg
	sc.Cloud = CloudSim
	if _, err := StartEmbedded(sc); !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "holds the loop cloud's state") {
		t.Fatalf("a sim start on the loop cloud's directory: %v; want a refusal", err)
	}

	cfg.RebuildStore = true
	e = startLoop(t, cfg)
	if r := e.Rebuilt; r == nil || r.Nodes != 2 || r.Volumes != 1 || r.Workloads != 1 || len(r.Unclaimed) != 0 {
		t.Fatalf("rebuilt %+v; want 2 nodes, 1 volume, 1 workload, nothing unclaimed", r)
	}
	w, ok, err := e.Store.Workload(uid)
	if err != nil || !ok || w.Node != "n1" || len(w.Volumes) != 1 || w.Volumes[0] != vol {
		t.Fatalf("rebuilt workload %+v, %v, %v; want %s on n1 using %s", w, ok, err, uid, vol)
	}
	if !mountedOn(e, "n1", p) || !attachedOnlyTo(e, vol, "n1") {
		t.Fatal("the rebuild unmounted or detached the workload's volume")
	}
}
