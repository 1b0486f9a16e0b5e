package mount

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tether/tether/cloud/testkit"
)

// TestTableReaderFresh: a view gets a table read after it was made, and
// keeps it; views made before a read share it.
func TestTableReaderFresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	r := &tableReader{path: path}
	write := func(point string) {
		writeFile(t, path, "1 0 8:1 / "+point+" rw - ext4 /dev/sda rw\n")
	}
	write("/a")
	v1, v2 := r.view(), r.view()
	t1 := get(t, v1)
	write("/b")
	if got := get(t, v2); got != t1 {
		t.Error("a view made before a read did not share it")
	}
	v3 := r.view()
	if got := get(t, v3); got.entries[0].Point != "/b" {
		t.Errorf("a view made after a change got %q", got.entries[0].Point)
	}
	if got := get(t, v1); got != t1 {
		t.Error("a view changed its table")
	}
}

// TestTableReaderCoalesced: while a read runs, a caller who asked before it
// started shares it; one who asked after it started gets the next read,
// which everyone waiting shares.
func TestTableReaderCoalesced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fifo")
	must(t, unix.Mkfifo(path, 0o600))
	r := &tableReader{path: path}
	early := r.view()
	first := async(r.view())
	waitFlight(t, r, 1) // the first read blocks opening the fifo
	joined := async(early)
	late1, late2 := async(r.view()), async(r.view())
	feed(t, path, "/first")
	waitFlight(t, r, 2)
	feed(t, path, "/second")
	tFirst, tJoined, tLate1, tLate2 := <-first, <-joined, <-late1, <-late2
	if tFirst != tJoined || tFirst.entries[0].Point != "/first" {
		t.Errorf("a view asked before the read started did not share it")
	}
	if tLate1 != tLate2 || tLate1.entries[0].Point != "/second" {
		t.Errorf("views asked during the first read: %q, %q; want one read of /second", tLate1.entries[0].Point, tLate2.entries[0].Point)
	}
}

func get(t *testing.T, v *tableView) *table {
	t.Helper()
	tab, err := v.get()
	must(t, err)
	return tab
}

func async(v *tableView) chan *table {
	c := make(chan *table, 1)
	go func() {
		tab, _ := v.get()
		c <- tab
	}()
	return c
}

// waitFlight waits (bounded) until read number seq is running.
func waitFlight(t *testing.T, r *tableReader, seq uint64) {
	t.Helper()
	testkit.Eventually(t, 5*time.Second, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.flight != nil && r.flight.seq == seq
	}, "read %d started", seq)
}

func feed(t *testing.T, fifo, point string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteString("1 0 8:1 / " + point + " rw - ext4 /dev/sda rw\n")
	must(t, err)
	must(t, f.Close())
}

// TestSourceIndexAgrees: the indexed table answers as a linear search of
// the whole table, on the sample and on this host's table.
func TestSourceIndexAgrees(t *testing.T) {
	inputs := []string{sampleMountinfo}
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		inputs = append(inputs, string(b))
	}
	for _, in := range inputs {
		tab, err := parseMountinfo(strings.NewReader(in))
		must(t, err)
		old, err := legacyParse(strings.NewReader(in))
		must(t, err)
		if len(old) != len(tab.entries) {
			t.Fatalf("%d entries, the old parser %d", len(tab.entries), len(old))
		}
		for i := range old {
			if old[i] != tab.entries[i] {
				t.Errorf("entry %d = %+v, the old parser %+v", i, tab.entries[i], old[i])
			}
			top, oldTop := tab.top(old[i].Point), legacyTop(old, old[i].Point)
			if top.ID != oldTop.ID {
				t.Errorf("top(%s) = %d, linear %d", old[i].Point, top.ID, oldTop.ID)
			}
			for _, avoid := range []string{"/data/pods", "/", old[i].Point} {
				if got, want := tab.sourceOf(top, avoid), legacySourceOf(old, oldTop, avoid); got != want {
					t.Errorf("sourceOf(%s, avoid %s) = %q, linear %q", old[i].Point, avoid, got, want)
				}
			}
		}
	}
}

func TestParseAllocations(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("40 31 254:0 /srv/content/vol\\0401 /data/pods/u" + strings.Repeat("x", i%7) + "/volumes/p/v rw,relatime shared:1 - ext4 /dev/vda rw\n")
	}
	in := b.String()
	allocs := testing.AllocsPerRun(5, func() {
		if _, err := parseMountinfo(strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 100 {
		t.Errorf("%v allocations to parse 2000 lines; want them not to grow with the lines", allocs)
	}
}
