package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/tether/tether/messages"
)

// fakeAPI records the Apply requests it receives.
type fakeAPI struct {
	messages.UnimplementedTetherServer
	mu   sync.Mutex
	reqs []*messages.ApplyRequest
}

func (f *fakeAPI) Apply(_ context.Context, req *messages.ApplyRequest) (*messages.ApplyResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, req)
	return &messages.ApplyResponse{Applied: []string{fmt.Sprintf("%d documents", len(req.Documents))}}, nil
}

// requests returns, per Apply request received, the documents' names.
func (f *fakeAPI) requests() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out [][]string
	for _, r := range f.reqs {
		var names []string
		for _, d := range r.Documents {
			switch x := d.Doc.(type) {
			case *messages.Document_Volume:
				names = append(names, "volume/"+x.Volume.Name)
			case *messages.Document_Node:
				names = append(names, "node/"+x.Node.Name)
			case *messages.Document_Workload:
				names = append(names, "workload/"+x.Workload.Name)
			}
		}
		out = append(out, names)
	}
	return out
}

func serveFake(t *testing.T) (*fakeAPI, string) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAPI{}
	g := grpc.NewServer()
	messages.RegisterTetherServer(g, f)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	return f, lis.Addr().String()
}

// execute runs tether with args in process and returns its exit code and
// what it printed (the error as main prints it).
func execute(stdin string, args ...string) (int, string) {
	root := newRoot()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err != nil {
		fmt.Fprintln(&out, "tether:", err)
	}
	return exitCode(err), out.String()
}

// tether apply reads every -f completely and sends what they hold as one
// request, or sends nothing and says which file and document is wrong.
func TestApplyFiles(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	x := file("x.yaml", "kind: Volume\nname: a\n")
	y := file("y.yaml", "kind: Volume\nname: b\n---\nkind: Node\nname: n1\n")
	arrays := file("arrays.json", `[{"kind":"Volume","name":"a"}][{"kind":"Volume","name":"b"}]`)
	garbage := file("garbage.json", `[{"kind":"Volume","name":"a"}] garbage`)
	extraBracket := file("bracket.json", `[{"kind":"Volume","name":"a"}]]`)
	alsoA := file("also-a.json", `{"kind":"Volume","name":"a"}`)
	seq := file("seq.yaml", "- kind: Volume\n  name: c\n- kind: Volume\n  name: d\n")
	empty := file("empty.yaml", "# nothing here\n")
	for _, tt := range []struct {
		name    string
		stdin   string
		files   []string
		want    []string // documents of the one request; nil: no request
		code    int
		wantOut string
	}{
		{name: "two files, one request", files: []string{x, y}, want: []string{"volume/a", "volume/b", "node/n1"}},
		{name: "stdin and a file", stdin: "kind: Node\nname: n2\n", files: []string{"-", x}, want: []string{"node/n2", "volume/a"}},
		{name: "json arrays one after another", files: []string{arrays}, want: []string{"volume/a", "volume/b"}},
		{name: "yaml sequence document", files: []string{seq}, want: []string{"volume/c", "volume/d"}},
		{name: "garbage after a json array", files: []string{garbage}, code: 1, wantOut: "garbage.json: document 2 (offset 31): invalid JSON"},
		{name: "bracket after a json array", files: []string{extraBracket}, code: 1, wantOut: "bracket.json: document 2 (offset 30): invalid JSON"},
		{name: "bad second file sends nothing", files: []string{y, garbage}, code: 1, wantOut: "garbage.json: document 2"},
		{name: "duplicate across files", files: []string{y, x, alsoA}, code: 1, wantOut: "also-a.json: document 1 (offset 0): volume/a is also " + x + ": document 1:"},
		{name: "empty file", files: []string{x, empty}, code: 1, wantOut: "empty.yaml: no documents"},
		{name: "missing file", files: []string{x, filepath.Join(dir, "missing.yaml")}, code: 1, wantOut: "missing.yaml"},
		{name: "stdin twice", files: []string{"-", "-"}, code: 2, wantOut: "-f - (stdin) may be given once"},
		{name: "same file twice", files: []string{x, x}, code: 2, wantOut: "given twice"},
		{name: "no file", code: 2, wantOut: "apply needs -f FILE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			api, addr := serveFake(t)
			args := []string{"apply", "--addr", addr, "--token", "t"}
			for _, f := range tt.files {
				args = append(args, "-f", f)
			}
			code, out := execute(tt.stdin, args...)
			if code != tt.code || !strings.Contains(out, tt.wantOut) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and output with %q", code, out, tt.code, tt.wantOut)
			}
			got := api.requests()
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("sent %v, want nothing sent", got)
				}
				return
			}
			if len(got) != 1 || strings.Join(got[0], " ") != strings.Join(tt.want, " ") {
				t.Fatalf("sent %v, want one request with %v", got, tt.want)
			}
		})
	}
}
