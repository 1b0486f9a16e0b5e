package journal

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestWriteRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	w, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				w.Write(Record{Kind: KindStatus, Node: "n1", Epoch: uint64(i), Attached: map[string]string{"v": "/dev/x"}, InUse: []string{"v"}})
			}
		}()
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A write cut short leaves a partial last line: it is dropped.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"t":1,"k":"sta`); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	rs, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 200 {
		t.Fatalf("read %d records, want 200", len(rs))
	}
	for i, r := range rs {
		if i > 0 && r.Time < rs[i-1].Time {
			t.Fatalf("record %d is older than the one before", i)
		}
		if r.Kind != KindStatus || r.Attached["v"] != "/dev/x" || len(r.InUse) != 1 {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
}

func TestNilWriterWritesNothing(t *testing.T) {
	var w *Writer
	w.Write(Record{Kind: KindStart})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReadRejectsGarbage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	if err := os.WriteFile(path, []byte("not json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Fatal("garbage read without an error")
	}
}
