// Package tether_test holds the module's layering test: the rules that keep
// the pure cores pure and the rooms apart, checked over every package of
// the module on every `go test ./...`. See docs/design.md, Layering.
package tether_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/tether/tether"

// pkg is what the rules read of one package (go list's answer, or a test's
// made-up one): its direct imports, its test files' imports and its
// transitive dependencies, all of non-test code unless named Test.
type pkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	Deps         []string
	TestImports  []string
	XTestImports []string
	// Sources, when set, stand in for the files under Dir (tests).
	Sources map[string]string
}

// The pure cores: state machines with no goroutines, clock, disk, actor
// runtime or protobuf. Their shells (actors/controller, node/agent) do all
// of that.
var cores = []string{module + "/actors/volume", module + "/actors/nodestatus", module + "/node/reconciler"}

// coreForbiddenImports may not be imported by a core's non-test files.
var coreForbiddenImports = []string{"os", "sync", "sync/atomic", "os/exec", "net", "syscall"}

// coreForbiddenDeps may not be reached by a core at all.
var coreForbiddenDeps = []string{"github.com/asynkron/", module + "/messages", "google.golang.org/protobuf/", "google.golang.org/grpc"}

// clockCalls read the wall clock or wait on it: a core is handed the time.
var clockCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"}

// check applies every rule to pkgs and says what breaks them, one line a
// break, naming the package, the rule and the culprit.
func check(pkgs []pkg) []string {
	var out []string
	for _, p := range pkgs {
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if slices.Contains(cores, p.ImportPath) {
			out = append(out, checkCore(p)...)
		}
		under := func(room string) bool { return rel == room || strings.HasPrefix(rel, room+"/") }
		switch {
		case under("actors"):
			out = append(out, forbid(p, "nothing under actors/ imports node/ or bootstrap/", "node", "bootstrap")...)
		case under("cloud"):
			out = append(out, forbid(p, "cloud/ imports neither actors/ nor node/ (nor bootstrap/)", "actors", "node", "bootstrap")...)
		case under("messages"):
			out = append(out, forbid(p, "messages imports no other tether package", "actors", "node", "bootstrap", "cloud")...)
		case under("node/csinode"):
			out = append(out, forbid(p, "node/csinode (a CSI node plugin's client) imports no actors/ nor bootstrap/", "actors", "bootstrap")...)
		case under("node"):
			out = append(out, forbid(p, "node/ imports no bootstrap/", "bootstrap")...)
		case under("cmd"):
			for _, imp := range p.Imports {
				r, ok := strings.CutPrefix(imp, module+"/")
				if ok && !strings.HasPrefix(r, "bootstrap/") && r != "messages" {
					out = append(out, fmt.Sprintf("%s imports %s: cmd/ imports only bootstrap/ (and messages, the API client's wire types)", p.ImportPath, imp))
				}
			}
		}
	}
	return out
}

// forbid says where p (its code, transitively, or its tests, directly)
// reaches one of the module's rooms it may not.
func forbid(p pkg, rule string, rooms ...string) []string {
	var out []string
	hit := func(imp string) bool {
		r, ok := strings.CutPrefix(imp, module+"/")
		if !ok {
			return false
		}
		for _, room := range rooms {
			if r == room || strings.HasPrefix(r, room+"/") {
				return true
			}
		}
		return false
	}
	for _, d := range p.Deps {
		if hit(d) {
			out = append(out, fmt.Sprintf("%s depends on %s: %s", p.ImportPath, d, rule))
		}
	}
	for _, d := range append(slices.Clone(p.TestImports), p.XTestImports...) {
		if hit(d) {
			out = append(out, fmt.Sprintf("%s's tests import %s: %s", p.ImportPath, d, rule))
		}
	}
	return out
}

// checkCore applies the pure cores' rules to p.
func checkCore(p pkg) []string {
	var out []string
	for _, imp := range p.Imports {
		if slices.Contains(coreForbiddenImports, imp) {
			out = append(out, fmt.Sprintf("%s imports %s: a pure core touches no disk, lock or network", p.ImportPath, imp))
		}
	}
	for _, d := range p.Deps {
		for _, bad := range coreForbiddenDeps {
			if d == bad || strings.HasPrefix(d, bad) || d == strings.TrimSuffix(bad, "/") {
				out = append(out, fmt.Sprintf("%s depends on %s: a pure core knows no actor runtime and no protobuf", p.ImportPath, d))
			}
		}
	}
	fset := token.NewFileSet()
	for _, name := range p.GoFiles {
		var src any
		if p.Sources != nil {
			src = p.Sources[name]
		}
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), src, 0)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", p.ImportPath, err))
			continue
		}
		timeName := ""
		for _, is := range f.Imports {
			if is.Path.Value == `"time"` {
				timeName = "time"
				if is.Name != nil {
					timeName = is.Name.Name
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				out = append(out, fmt.Sprintf("%s: %s starts a goroutine: a pure core never does", p.ImportPath, fset.Position(n.Pos())))
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && slices.Contains(clockCalls, n.Sel.Name) {
					out = append(out, fmt.Sprintf("%s: %s uses time.%s: a pure core is handed the time", p.ImportPath, fset.Position(n.Pos()), n.Sel.Name))
				}
			}
			return true
		})
	}
	return out
}

// list asks go list for every package of the module.
func list(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outp, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(outp)))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's answer: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestLayering(t *testing.T) {
	pkgs := list(t)
	var seen []string
	for _, p := range pkgs {
		seen = append(seen, p.ImportPath)
	}
	// The rules must have something to hold: every core and room is there.
	for _, want := range append(slices.Clone(cores), module+"/actors/controller", module+"/cloud/sim", module+"/node/agent", module+"/cmd/tether") {
		if !slices.Contains(seen, want) {
			t.Fatalf("go list did not name %s: the rules would check nothing there", want)
		}
	}
	for _, msg := range check(pkgs) {
		t.Error(msg)
	}
}

// TestLayeringCatches breaks each rule on purpose, in a made-up package, and
// sees it caught, so that a green TestLayering means something.
func TestLayeringCatches(t *testing.T) {
	core := func(src string, imports, deps []string) pkg {
		return pkg{ImportPath: module + "/actors/volume", GoFiles: []string{"v.go"}, Imports: imports, Deps: deps, Sources: map[string]string{"v.go": src}}
	}
	const clean = "package volume\nimport \"time\"\nfunc F(now time.Time) time.Time { return now.Add(time.Second) }\n"
	for _, tc := range []struct {
		name string
		p    pkg
		want string // in the one message
	}{
		{"core reads the clock", core("package volume\nimport \"time\"\nfunc F() time.Time { return time.Now() }\n", nil, nil), "uses time.Now"},
		{"core reads the clock, renamed", core("package volume\nimport t \"time\"\nfunc F() { t.Sleep(1) }\n", nil, nil), "uses time.Sleep"},
		{"core starts a goroutine", core("package volume\nfunc F() { go func() {}() }\n", nil, nil), "starts a goroutine"},
		{"core imports os", core(clean, []string{"os"}, nil), "imports os"},
		{"core imports sync", core(clean, []string{"sync"}, nil), "imports sync"},
		{"core reaches Proto.Actor", core(clean, nil, []string{"github.com/asynkron/protoactor-go/actor"}), "protoactor-go/actor"},
		{"core reaches messages", core(clean, nil, []string{module + "/messages"}), "tether/messages"},
		{"actors reach node", pkg{ImportPath: module + "/actors/controller", Deps: []string{module + "/node/layout"}}, "nothing under actors/ imports node/"},
		{"actors' tests import node", pkg{ImportPath: module + "/actors/store", XTestImports: []string{module + "/node/agent"}}, "tests import"},
		{"cloud reaches actors", pkg{ImportPath: module + "/cloud/sim", Deps: []string{module + "/actors/runtime/clock"}}, "cloud/ imports neither"},
		{"cloud reaches node", pkg{ImportPath: module + "/cloud/loop", Deps: []string{module + "/node/mount"}}, "cloud/ imports neither"},
		{"cmd imports actors", pkg{ImportPath: module + "/cmd/tether", Imports: []string{module + "/bootstrap/process", module + "/actors/controller"}}, "cmd/ imports only bootstrap/"},
		{"cmd imports cloud", pkg{ImportPath: module + "/cmd/tether", Imports: []string{module + "/cloud/sim"}}, "cmd/ imports only bootstrap/"},
		{"node/csinode reaches actors", pkg{ImportPath: module + "/node/csinode", Deps: []string{module + "/actors/runtime/clock"}}, "node/csinode"},
		{"node reaches bootstrap", pkg{ImportPath: module + "/node/agent", Deps: []string{module + "/bootstrap/process"}}, "node/ imports no bootstrap/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := check([]pkg{tc.p})
			if len(got) != 1 || !strings.Contains(got[0], tc.want) {
				t.Fatalf("check = %q, want one message containing %q", got, tc.want)
			}
		})
	}
	// And what keeps the rules is not caught: a core handed the time,
	// cmd importing bootstrap and messages, node importing actors.
	for _, p := range []pkg{
		core(clean, []string{"time", "fmt"}, []string{module + "/cloud", "fmt"}),
		{ImportPath: module + "/cmd/tether", Imports: []string{module + "/bootstrap/operator/api", module + "/messages", "fmt"}},
		{ImportPath: module + "/node/reconciler", Deps: []string{module + "/actors/runtime/backoff"}},
	} {
		if got := check([]pkg{p}); len(got) != 0 {
			t.Errorf("check(%s) = %q, want nothing", p.ImportPath, got)
		}
	}
}
