package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tether/tether/bootstrap/operator/api"
)

// writeFile writes content to name in a temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// A document no message of the API could carry is refused before
// anything is sent, naming its file and its number there.
func TestOversizedDocumentRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("kind: Node\nname: n1\n---\nkind: Workload\nname: big\nnode: n1\nvolumes:\n")
	for i := range 20000 {
		fmt.Fprintf(&b, "  - name: volume-with-a-long-name-%040d\n", i)
	}
	file := writeFile(t, "big.yaml", b.String())
	_, err := readInputs([]string{file}, nil)
	want := file + ": document 2 (line 4): workload/big: the document is "
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d one document may have", api.MaxDocumentBytes)) {
		t.Fatalf("err = %v; want %q and the bound", err, want)
	}
	fake, addr := serveFake(t)
	code, out := execute("", "apply", "-f", file, "--addr", addr, "--token", "t")
	if code != 1 || !strings.Contains(out, want) || len(fake.requests()) != 0 {
		t.Fatalf("apply: exit %d, %d requests: %s", code, len(fake.requests()), out)
	}
}

// allocated returns the bytes fn allocates.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// nodesYAML returns n node documents.
func nodesYAML(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\nkind: Node\nname: node-%07d\n", i)
	}
	return b.String()
}

// The document bound is enforced while reading: an input far past it is
// refused at the first document over it, naming file and document, having
// allocated a fraction of what the input holds.
func TestReadInputsBoundWhileReading(t *testing.T) {
	file := writeFile(t, "many.yaml", nodesYAML(100_000))
	st, _ := os.Stat(file)
	var err error
	alloc := allocated(func() { _, err = readInputsWithin([]string{file}, nil, maxInputBytes, 100) })
	want := file + ": document 101 (line 302): more than 100 documents, the bound of one apply"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v; want %q", err, want)
	}
	t.Logf("refused %d bytes after allocating %d", st.Size(), alloc)
	if alloc > uint64(st.Size())/4 {
		t.Fatalf("refusing %d bytes at document 101 allocated %d bytes: the input was read past the bound", st.Size(), alloc)
	}
}

// countingReader counts what is read from it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// zeros is an endless stream of NUL bytes, like /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// /dev/zero as input: refused at its first bytes, not after reading the
// byte bound (512 MiB).
func TestReadInputsZeros(t *testing.T) {
	r := &countingReader{r: io.LimitReader(zeros{}, 64<<20)}
	var err error
	alloc := allocated(func() { _, err = readInputs([]string{"-"}, r) })
	if err == nil || !strings.Contains(err.Error(), "stdin: document 1: invalid YAML") {
		t.Fatalf("err = %v; want invalid YAML in document 1", err)
	}
	t.Logf("refused after reading %d bytes, allocating %d", r.n, alloc)
	if r.n > 1<<20 || alloc > 4<<20 {
		t.Fatalf("read %d bytes and allocated %d before refusing NUL bytes", r.n, alloc)
	}
}

// What an apply holds while it sends is within twice its input: documents
// are kept encoded, not as text or decoded messages.
func TestReadInputsMemory(t *testing.T) {
	for _, tt := range []struct {
		name, text string
	}{
		{"nodes", nodesYAML(50_000)},
		{"workloads", strings.ReplaceAll(nodesYAML(20_000), "kind: Node\nname: node-", "kind: Workload\nnode: n1\nvolumes:\n  - name: v1\n    readOnly: true\nname: w-")},
	} {
		file := writeFile(t, tt.name+".yaml", tt.text)
		var in *input
		var err error
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		in, err = readInputs([]string{file}, nil)
		runtime.GC()
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		t.Logf("%s: %d bytes of input, %d documents, %d bytes held", tt.name, len(tt.text), in.batch.Len(), held)
		if held > 2*int64(len(tt.text)) {
			t.Errorf("%s: %d bytes of input held in %d bytes: want at most twice the input", tt.name, len(tt.text), held)
		}
		runtime.KeepAlive(in)
	}
}

// The server's "document N" counts over every file; the client names the
// file and the document's number within it.
func TestServerErrorNamesFileAndDocument(t *testing.T) {
	client := startTether(t)
	ok := writeFile(t, "ok1.json", `[{"kind":"Node","name":"a"},{"kind":"Node","name":"b"}]`)
	bad := writeFile(t, "bad2.yaml", "kind: Volume\nname: v\n---\nkind: Workload\nname: stray\nnode: nowhere\n")
	code, out := execute("", append([]string{"apply", "-f", ok, "-f", bad}, client...)...)
	want := "InvalidArgument: " + bad + `: document 2 (line 4): controller: invalid request: workload "stray" names unknown node "nowhere"`
	if code != 1 || !strings.Contains(out, want) {
		t.Fatalf("apply: exit %d: %s; want %q", code, out, want)
	}
	var x sources
	for _, s := range []source{{file: "a", doc: 1}, {file: "a", doc: 2}, {file: "a", doc: 4, item: 1}, {file: "a", doc: 4, item: 2}, {file: "b", doc: 1}} {
		x.add(s)
	}
	for msg, want := range map[string]string{
		"document 4: bad":                "a: document 4, item 2: bad",
		"controller: document 5: bad":    "controller: b: document 1: bad",
		"document 6: beyond":             "document 6: beyond",
		"after 3 documents: nothing":     "after 3 documents: nothing",
		"document 1: x (not document 2)": "a: document 1: x (not a: document 2)",
	} {
		if got := x.explain(errors.New(msg)).Error(); got != want {
			t.Errorf("explain(%q) = %q, want %q", msg, got, want)
		}
	}
}
