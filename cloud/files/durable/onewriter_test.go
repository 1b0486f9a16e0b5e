package durable

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writerCalls are the os calls a temporary-file-and-rename (or link)
// writer is made of: only this package may make them.
var writerCalls = map[string]bool{"CreateTemp": true, "Rename": true, "Link": true}

// notWriters are the other calls allowed, each with its reason.
var notWriters = map[string]string{
	// Moves a damaged store aside before a rebuild; CreateBolt then
	// creates the new one (durably) and syncs the same directory.
	"bootstrap/process/rebuild.go: os.Rename": "moves a file aside, writes nothing",
}

// TestOneDurableWriter: outside this package, no non-test file of the
// module calls os.CreateTemp, os.Rename or os.Link (but for notWriters):
// a file written durably goes through WriteFile, Replace or Create.
func TestOneDurableWriter(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "cloud/files/durable/") {
			return nil
		}
		calls, err := writerCallsIn(path)
		if err != nil {
			return err
		}
		for _, c := range calls {
			key := rel + ": " + c.call
			if _, ok := notWriters[key]; ok {
				seen[key] = true
				continue
			}
			t.Errorf("%s:%d: %s: write files durably with cloud/files/durable (WriteFile, Replace, Create), not a writer of its own", rel, c.line, c.call)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for key := range notWriters {
		if !seen[key] {
			t.Errorf("notWriters lists %s, which is gone: remove it", key)
		}
	}
}

// The checker catches a writer of its own: the temporary file, fsync and
// rename that node/agent/epoch.go had (without the directory's fsync).
func TestOneDurableWriterCatches(t *testing.T) {
	src := `package agent

import "os"

func write(dir, path string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".epoch-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	tmp.Close()
	return os.Rename(tmp.Name(), path)
}
`
	path := filepath.Join(t.TempDir(), "epoch.go")
	if err := writeFixture(path, src); err != nil {
		t.Fatal(err)
	}
	calls, err := writerCallsIn(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.call+"@"+strconv.Itoa(c.line))
	}
	if strings.Join(got, " ") != "os.CreateTemp@6 os.Rename@17" {
		t.Fatalf("found %q, want os.CreateTemp@6 os.Rename@17", got)
	}
}

type writerCall struct {
	call string // "os.Rename"
	line int
}

// writerCallsIn lists the writerCalls of the Go file at path, the os
// package under whatever name the file imports it.
func writerCallsIn(path string) ([]writerCall, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	osName := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "os" {
			osName = "os"
			if im.Name != nil {
				osName = im.Name.Name
			}
		}
	}
	if osName == "" {
		return nil, nil
	}
	var out []writerCall
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == osName && writerCalls[sel.Sel.Name] {
			out = append(out, writerCall{call: "os." + sel.Sel.Name, line: fset.Position(sel.Pos()).Line})
		}
		return true
	})
	return out, nil
}
