package store

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openDeadline bounds OpenBolt on a ~40 MB store, sound or corrupt:
// generous (it takes well under a second here, a few under the race
// detector); the bug it guards against took 118 s and then panicked.
var openDeadline = map[bool]time.Duration{false: 5 * time.Second, true: 20 * time.Second}[raceEnabled]

// openRefused asserts that OpenBolt refuses path within openDeadline with
// an error matching want, naming the file and saying what to do.
func openRefused(t *testing.T, path string, want error) error {
	t.Helper()
	start := time.Now()
	b, err := OpenBolt(path)
	took := time.Since(start)
	if err == nil {
		_ = b.Close()
		t.Fatalf("OpenBolt opened a damaged store (in %v)", took)
	}
	t.Logf("refused in %v: %v", took, err)
	if took > openDeadline {
		t.Errorf("OpenBolt took %v, want under %v", took, openDeadline)
	}
	if !errors.Is(err, want) {
		t.Errorf("err = %v, want it to match %v", err, want)
	}
	for _, says := range []string{path, "restore it from a backup", "--rebuild-store", "(see docs/operating.md: Recovery)"} {
		if !strings.Contains(err.Error(), says) {
			t.Errorf("err = %q, want it to say %q", err, says)
		}
	}
	return err
}

// TestOpenBoltRefusesCorruptStore: damage anywhere in the pages of a
// ~40 MB store is found when it is opened, within seconds, and nothing
// panics. The cases that keep a page's header are those where bbolt's own
// check (tx.Check) follows a garbage offset or page ID and the process dies
// of a fault or a stack overflow, neither of which can be recovered.
func TestOpenBoltRefusesCorruptStore(t *testing.T) {
	good := bigStore(t)
	ps, hwm := storeSize(t, good)
	freelist := int(storeMeta(t, good).freelist)
	half := middlePagesInUse(t, good)
	leaf := pageHolding(t, good, "workload-010000{")
	branch := firstBranch(t, good)
	t.Logf("store of %.1f MB, %d pages of %d bytes in use", float64(len(good))/(1<<20), hwm, ps)
	for _, c := range []struct {
		name    string
		bad     []byte
		finding string // "": whatever it finds
	}{
		{"8 KiB in the middle", damaged(good, half, 8<<10, 1), ""},
		{"8 KiB in the middle, seed 2", damaged(good, half, 8<<10, 2), ""},
		{"8 KiB in the middle, unaligned", damaged(good, half+1234, 8<<10, 3), ""},
		{"the freelist page", damaged(good, freelist*ps, 64, 4), "names itself page"},
		{"element headers of a leaf page", damaged(good, leaf+pageHeader, 64, 5), "outside its page"},
		{"a branch page pointing to itself", pointToSelf(good, branch), "is used twice"},
		{"both meta pages", damaged(good, 0, 8<<10, 7), "neither meta page"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := openRefused(t, storeFile(t, c.bad), ErrCorrupt)
			if !strings.Contains(err.Error(), c.finding) {
				t.Errorf("err = %q, want it to say %q", err, c.finding)
			}
		})
	}
}

// TestOpenBoltUnusedSpace: the file's tail past the last page in use
// (bbolt grows the file ahead of need) holds nothing, so damage there, or
// its loss, is no corruption.
func TestOpenBoltUnusedSpace(t *testing.T) {
	good := smallStore(t)
	ps, hwm := storeSize(t, good)
	if hwm*ps+8<<10 > len(good) {
		t.Skipf("no unused tail: %d pages of %d bytes in a file of %d", hwm, ps, len(good))
	}
	for name, data := range map[string][]byte{
		"damaged": damaged(good, hwm*ps, 8<<10, 1),
		"cut":     good[:hwm*ps],
	} {
		openBolt(t, storeFile(t, data))
		t.Logf("%s tail: opens", name)
	}
}

// TestOpenBoltRefusesOverwrittenRecord: a record whose bytes are garbage in
// a sound page (bbolt keeps no checksums of values) is found too.
func TestOpenBoltRefusesOverwrittenRecord(t *testing.T) {
	good := bigStore(t)
	at := bytes.Index(good, []byte(`vol-002500{"id"`))
	if at < 0 {
		t.Fatal("record of vol-002500 not found in the file")
	}
	bad := bytes.Clone(good)
	copy(bad[at+len("vol-002500"):], "\x00\xff\x13")
	err := openRefused(t, storeFile(t, bad), ErrCorrupt)
	if want := `record volumes/"vol-002500" is not JSON`; !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to say %q", err, want)
	}
}

func TestOpenBoltRefusesTruncatedStore(t *testing.T) {
	good := bigStore(t)
	ps, hwm := storeSize(t, good)
	for _, size := range []int{hwm*ps - ps, len(good) / 3, 5000, 100} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			err := openRefused(t, storeFile(t, good[:size]), ErrCorrupt)
			if !strings.Contains(err.Error(), "truncated") && !strings.Contains(err.Error(), "neither meta page") {
				t.Errorf("err = %q, want it to say truncated (or the meta pages are cut)", err)
			}
		})
	}
}

// TestOpenBoltOneBadMeta: with one meta page damaged bbolt opens the file
// at the other. If the damaged one is the older, nothing is lost and
// OpenBolt opens the file. If it is the newer, that would roll back the
// last commit, an acknowledged write: OpenBolt refuses, saying which
// transactions; OpenBoltWith(AcceptRollback) opens at the older one, and
// its first write mends the file.
func TestOpenBoltOneBadMeta(t *testing.T) {
	good := smallStore(t)
	page := os.Getpagesize()
	cur := storeMeta(t, good)
	newer, older := int(cur.txid%2), int(1-cur.txid%2)
	body := func(meta int) int { return meta*page + pageHeader }

	// The older page's checksum damaged, its transaction ID still legible.
	// (Damage to its ID too looks like the newer page's: refused.)
	path := storeFile(t, damaged(good, body(older)+56, 8, 1))
	if vs, err := openBolt(t, path).Volumes(); err != nil || len(vs) != 5000 {
		t.Fatalf("older meta %d damaged: %d volumes, %v; want 5000", older, len(vs), err)
	}
	for _, tt := range []struct {
		name string
		data []byte
		want string
	}{
		{"checksum only", damaged(good, body(newer)+56, 8, 2),
			fmt.Sprintf("meta page %d, the newer of the two, is damaged: opening would go back to transaction %d and lose transaction %d, the last commit", newer, cur.txid-1, cur.txid)},
		{"whole meta", damaged(good, body(newer), 64, 3),
			fmt.Sprintf("meta page %d, the newer of the two, is damaged: opening would go back to transaction %d and lose the transaction after %d (its meta page is unreadable)", newer, cur.txid-1, cur.txid-1)},
	} {
		path := storeFile(t, tt.data)
		err := openRefused(t, path, ErrRollback)
		if !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "--accept-rollback") {
			t.Fatalf("%s: err = %v, want %q and the flag that goes on", tt.name, err, tt.want)
		}
		b, err := OpenBoltWith(path, OpenOptions{AcceptRollback: true})
		if err != nil {
			t.Fatalf("%s: accepting the rollback: %v", tt.name, err)
		}
		vs, err := b.Volumes()
		must(t, errors.Join(err, b.Close()))
		if len(vs) != 5000 {
			t.Fatalf("%s: after the rollback: %d volumes; want 5000", tt.name, len(vs))
		}
		openBolt(t, path) // mended: opens without accepting anything
	}
}

// TestOpenBoltEmptyFile: an existing 0-byte file is refused, and stays 0
// bytes (bbolt would have made it a new store).
func TestOpenBoltEmptyFile(t *testing.T) {
	path := storeFile(t, nil)
	openRefused(t, path, ErrEmpty)
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Fatalf("after OpenBolt: %v, %v; want the file still empty", fi, err)
	}
	if b, err := CreateBolt(path); !errors.Is(err, fs.ErrExist) {
		if err == nil {
			_ = b.Close()
		}
		t.Fatalf("CreateBolt over an empty file: %v, want fs.ErrExist", err)
	}
}

// TestOpenBoltMissingFile: OpenBolt creates nothing; CreateBolt creates a
// store, once, and leaves no temporary file.
func TestOpenBoltMissingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tether.db")
	b, err := OpenBolt(path)
	if err == nil {
		_ = b.Close()
		t.Fatal("OpenBolt opened a missing file")
	}
	if !errors.Is(err, ErrMissing) || !errors.Is(err, fs.ErrNotExist) || err.Error() != "store: "+path+" does not exist" {
		t.Fatalf("err = %v, want %q matching ErrMissing and fs.ErrNotExist", err, "store: "+path+" does not exist")
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after OpenBolt: %v, want no file", err)
	}
	b, err = CreateBolt(path)
	must(t, err)
	must(t, b.PutVolume(VolumeSpec{ID: "v1"}))
	must(t, b.Close())
	if b, err := CreateBolt(path); !errors.Is(err, fs.ErrExist) {
		if err == nil {
			_ = b.Close()
		}
		t.Fatalf("second CreateBolt: %v, want fs.ErrExist", err)
	}
	entries, err := os.ReadDir(dir)
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("directory holds %v, want only tether.db", entries)
	}
	if _, ok, _ := openBolt(t, path).Volume("v1"); !ok {
		t.Fatal("volume v1 lost")
	}
}

// TestOpenBoltForeignFile: a sound bbolt file without tether's buckets is
// not taken for an empty store.
func TestOpenBoltForeignFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tether.db")
	must(t, initBoltNoBuckets(path))
	err := openRefused(t, path, ErrCorrupt)
	if !strings.Contains(err.Error(), "none of tether's buckets") {
		t.Errorf("err = %q, want it to say so", err)
	}
}

// TestBoltCorruptedWhileOpen: a page damaged after OpenBolt makes the reads
// that meet it fail with ErrCorrupt instead of panicking, and every later
// transaction too.
func TestBoltCorruptedWhileOpen(t *testing.T) {
	path := storeFile(t, smallStore(t))
	b := openBolt(t, path)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	// The page holding the first volume's record: its header overwritten.
	data, err := os.ReadFile(path)
	must(t, err)
	at := bytes.Index(data, []byte(`vol-000000{"id"`))
	if at < 0 {
		t.Fatal("record of vol-000000 not found in the file")
	}
	page := os.Getpagesize()
	_, err = f.WriteAt(bytes.Repeat([]byte{0xAB}, pageHeader), int64(at/page*page))
	must(t, err)

	_, err = b.Volumes()
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Volumes() on a damaged page: %v, want ErrCorrupt naming %s", err, path)
	}
	if _, err := b.Nodes(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Nodes() after: %v, want ErrCorrupt (the store refuses everything once corrupt)", err)
	}
	if err := b.PutNode(NodeSpec{Name: "n"}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("PutNode after: %v, want ErrCorrupt", err)
	}
}

// TestBoltTruncatedWhileOpen: reading a page past the end of the file is a
// fault (SIGBUS), which would end the process; it is an ErrCorrupt.
func TestBoltTruncatedWhileOpen(t *testing.T) {
	path := storeFile(t, smallStore(t))
	b := openBolt(t, path)
	must(t, os.Truncate(path, int64(4*os.Getpagesize())))
	if _, err := b.Workloads(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Workloads() of a truncated file: %v, want ErrCorrupt", err)
	}
}

// TestOpenBoltCheckTime measures the whole verification of a sound store
// of the fixture's size, ~90 MB (the number in docs/operating.md).
func TestOpenBoltCheckTime(t *testing.T) {
	path := storeFile(t, bigStore(t))
	start := time.Now()
	b, err := OpenBolt(path)
	took := time.Since(start)
	must(t, err)
	must(t, b.Close())
	t.Logf("OpenBolt of a sound %.1f MB store, verification included: %v", float64(len(bigStore(t)))/(1<<20), took)
	if took > openDeadline {
		t.Errorf("OpenBolt took %v, want under %v", took, openDeadline)
	}
}

// BenchmarkVerify40MB: the verification alone (OpenBolt also assigns
// missing ObjectUIDs, which decodes every record).
func BenchmarkVerify40MB(b *testing.B) {
	path := storeFile(b, bigStore(b))
	for b.Loop() {
		if err := verify(path, false); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenBolt40MB(b *testing.B) {
	path := storeFile(b, bigStore(b))
	for b.Loop() {
		st, err := OpenBolt(path)
		if err != nil {
			b.Fatal(err)
		}
		_ = st.Close()
	}
}
