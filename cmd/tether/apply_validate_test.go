package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An apply is validated once, by the server: tether apply sends what it
// read (TestApplyFiles: "fields are the server's to judge"), and the
// server's refusal names the file, document and line it came from, with
// nothing applied.
func TestApplyValidatedByServer(t *testing.T) {
	client := startTether(t)
	dir := t.TempDir()
	file := func(name, content string) string { return testFile(t, dir, name, content) }
	const node = "kind: Node\nname: n1\n---\n"
	x := file("x.yaml", "kind: Volume\nname: a\n")
	y := file("y.yaml", "kind: Volume\nname: b\n---\nkind: Node\nname: n2\n")
	alsoA := file("also-a.json", `{"kind":"Volume","name":"a"}`)
	for _, tt := range []struct {
		name  string
		files []string
		want  string
	}{
		{"volume mode", []string{file("mode.yaml", node+"kind: Volume\nname: v\nvolumeMode: RawBlock\n")},
			`mode.yaml: document 2 (line 4): controller: invalid request: volume "v": volumeMode: unknown mode "RawBlock"`},
		{"access mode", []string{file("access.yaml", node+"kind: Volume\nname: v\naccessMode: ReadWriteSome\n")},
			`access.yaml: document 2 (line 4): controller: invalid request: unknown access mode "ReadWriteSome"`},
		{"fsType", []string{file("fstype.yaml", node+"kind: Volume\nname: v\nfsType: Ext4\n")},
			`fstype.yaml: document 2 (line 4): controller: invalid request: volume "v": fsType: "Ext4": only lowercase letters and digits`},
		{"block options", []string{file("block.json", `{"kind":"Node","name":"n1"} {"kind":"Volume","name":"v","volumeMode":"Block","mountOptions":["ro"]}`)},
			`block.json: document 2 (offset 28): controller: invalid request: volume "v": fsType, mountOptions`},
		{"option comma", []string{file("comma.yaml", "kind: Volume\nname: v\nmountOptions: [\"ro,nodev\"]\n")},
			`comma.yaml: document 1 (line 1): controller: invalid request: volume "v": mountOptions: [0] "ro,nodev": a comma would split it`},
		{"secret escapes", []string{file("secret.yaml", "kind: Volume\nname: v\ncsi:\n  secretRef: ../../etc/shadow\n")},
			`secret.yaml: document 1 (line 1): controller: invalid request: volume "v": csi.secretRef: names: invalid secret name "../../etc/shadow"`},
		{"missing name", []string{file("noname.yaml", node+"kind: Volume\n")},
			`noname.yaml: document 2 (line 4): names: invalid volume ID "": must not be empty`},
		{"workload without node", []string{file("nonode.yaml", node+"kind: Workload\nname: w\n")},
			`nonode.yaml: document 2 (line 4): controller: invalid request: workload "w": names: invalid node name "": must not be empty`},
		{"bad name", []string{file("name.yaml", node+"kind: Workload\nname: w/1\nnode: n1\n")},
			`name.yaml: document 2 (line 4): names: invalid workload UID "w/1"`},
		{"unknown node", []string{file("ref.yaml", node+"kind: Workload\nname: w\nnode: n9\n")},
			`ref.yaml: document 2 (line 4): controller: invalid request: workload "w" names unknown node "n9"`},
		{"duplicate across files", []string{y, x, alsoA},
			"also-a.json: document 1 (offset 0): volume/a is also " + x + ": document 1 (line 1)"},
		{"duplicate in a list", []string{file("list.yaml", "- kind: Node\n  name: a\n- kind: Node\n  name: a\n")},
			"list.yaml: document 1, item 2 (line 3): node/a is also " + filepath.Join(dir, "list.yaml") + ": document 1, item 1 (line 1)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"apply"}
			for _, f := range tt.files {
				args = append(args, "-f", f)
			}
			code, out := execute("", append(args, client...)...)
			if code != 1 || !strings.Contains(out, "InvalidArgument: ") || !strings.Contains(out, tt.want) {
				t.Fatalf("exit %d, output:\n%s\nwant exit 1 and output with %q", code, out, tt.want)
			}
		})
	}
	wantListed(t, client, map[string]bool{})
}

// explain names the file and place of each document the server names;
// a number that is no document of the apply is left as it is.
func TestSourcesExplain(t *testing.T) {
	var at sources
	at.add(source{file: "a.yaml", doc: 1, unit: "line", pos: 1})
	at.add(source{file: "b.json", doc: 2, item: 3, unit: "offset", pos: 9})
	inner := errors.New("InvalidArgument: controller: invalid request: document 2: node/x is also document 1; document 3 and document 0 are not")
	err := at.explain(inner)
	want := "InvalidArgument: controller: invalid request: b.json: document 2, item 3 (offset 9): node/x is also a.yaml: document 1 (line 1); document 3 and document 0 are not"
	if err.Error() != want || !errors.Is(err, inner) {
		t.Fatalf("explain = %q (wrapping the original: %v), want %q", err, errors.Is(err, inner), want)
	}
	plain := errors.New("Unavailable: connection refused")
	if at.explain(plain) != plain || at.explain(nil) != nil {
		t.Fatal("explain changed an error that names no document")
	}
}

// testFile writes content to dir/name and returns its path.
func testFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
