package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func parse(in string) (int, error) {
	es, err := parseInput("in", []byte(in))
	if err != nil {
		return 0, err
	}
	docs, err := toDocuments(es)
	return len(docs), err
}

func TestParseInput(t *testing.T) {
	good := []struct {
		name, in string
		n        int
	}{
		{"yaml documents", "kind: Node\nname: n1\n---\nkind: Volume\nname: v1\naccessMode: ReadWriteMany\n---\nkind: Workload\nname: w1\nnode: n1\nvolumes:\n  - name: v1\n    readOnly: true\n", 3},
		{"yaml empty documents", "---\n# nothing\n---\nkind: Node\nname: n1\n---\n", 1},
		{"yaml list document", "- kind: Node\n  name: n1\n- kind: Node\n  name: n2\n---\nkind: Node\nname: n3\n", 3},
		{"json object", `{"kind":"Node","name":"n1"}`, 1},
		{"json array", `[{"kind":"Node","name":"n1"},{"kind":"Volume","name":"v1"}]`, 2},
		{"json objects", `{"kind":"Node","name":"n1"} {"kind":"Node","name":"n2"}`, 2},
		{"json arrays and objects", "\n[{\"kind\":\"Node\",\"name\":\"n1\"}]\n[{\"kind\":\"Node\",\"name\":\"n2\"}]{\"kind\":\"Node\",\"name\":\"n3\"}\n\n", 3},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			n, err := parse(tt.in)
			if err != nil || n != tt.n {
				t.Fatalf("got %d docs, err %v; want %d", n, err, tt.n)
			}
		})
	}
	const node = `{"kind":"Node","name":"n1"}` // 27 bytes
	bad := []struct {
		name, in, want string
	}{
		{"malformed yaml", "kind: Node\nname: [n1\n", "in: document 1: invalid YAML"},
		{"malformed json", `{"kind":"Node","name":}`, "in: document 1 (offset 0): invalid JSON"},
		{"truncated json", `[` + node, "in: document 1 (offset 0): invalid JSON: unexpected EOF"},
		{"unknown field yaml", "kind: Node\nname: n1\ncolor: blue\n", `in: document 1 (line 1): the object: unknown field "color" (want kind, name, accessMode, volumeMode, fsType, mountOptions, csi, node or volumes)`},
		{"unknown field json", `{"kind":"Node","name":"n1","color":"blue"}`, `unknown field "color"`},
		{"unknown kind", "kind: Pod\nname: p\n", `unknown kind "Pod"`},
		{"missing kind", "name: p\n", "kind is required"},
		{"field of another kind", "kind: Volume\nname: v\nnode: n1\n", "workload fields"},
		{"empty", "", "in: no documents"},
		{"only comments", "# x\n---\n", "in: no documents"},
		// Nothing is skipped: what follows a document is another one, or an error.
		{"garbage after json", node + " x", "in: document 2 (offset 28): invalid JSON"},
		{"number after json", node + "\n42", "in: document 2 (offset 28): want an object"},
		{"bracket after json array", "[" + node + "]]", "in: document 2 (offset 29): invalid JSON"},
		{"non-object in json array", "[" + node + ", 7]", "in: document 1, item 2 (offset 30): want an object"},
		{"error names the array item", "[" + node + `,{"kind":"Nod","name":"x"}]`, `in: document 1, item 2 (offset 29): unknown kind "Nod"`},
		{"repeated json field", `{"kind":"Node","name":"a","name":"b"}`, `field "name" is given twice`},
		{"json key in another case", `{"kind":"Node","name":"a","Name":"b"}`, `in: document 1 (offset 0): the object: unknown field "Name"`},
		{"repeated nested json field", `{"kind":"Workload","name":"w","node":"n1","volumes":[{"name":"v","name":"u"}]}`, `field "name" is given twice`},
		{"repeated yaml field", "kind: Node\nname: a\nname: b\n", `in: document 1 (line 1): the object: field "name" is given twice`},
		{"empty yaml object", "kind: Node\nname: n1\n---\n{}\n", "in: document 2 (line 4): kind is required"},
		{"blank yaml fields", "kind: ''\nname: ''\n", "in: document 1 (line 1): kind is required"},
		{"yaml scalar document", "kind: Node\nname: n1\n---\ngarbage\n", `in: document 2 (line 4): want an object (kind: ..., name: ...) or a list of objects, found !!str "garbage"`},
		{"yaml null document", "kind: Node\nname: n1\n--- ~\n", `document 2 (line 3): want an object`},
		{"garbage after yaml end", "kind: Node\nname: n1\n...\ngarbage\n", "in: document 2: invalid YAML"},
		{"yaml list with a scalar", "- kind: Node\n  name: a\n- x\n", `in: document 1, item 2 (line 3): want an object (kind: ..., name: ...), found the string "x"`},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			es, err := parseInput("in", []byte(tt.in))
			if err == nil {
				_, err = toDocuments(es)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// The input bound is for all -f files together.
func TestReadInputsBound(t *testing.T) {
	const limit = 4096
	big := "kind: Node\nname: n1\n#" + strings.Repeat("x", limit/2)
	file := filepath.Join(t.TempDir(), "half.yaml")
	if err := os.WriteFile(file, []byte(big), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		files []string
		stdin string
		want  string
	}{
		{"one file", []string{"-"}, big + strings.Repeat("x", limit/2), "stdin: larger than 4096 bytes"},
		{"together", []string{file, "-"}, strings.Replace(big, "n1", "n2", 1), "stdin: the -f files together are larger than 4096 bytes"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in, err := readInputsWithin(tt.files, strings.NewReader(tt.stdin), limit, 10)
			if err == nil || !strings.Contains(err.Error(), tt.want) || in != nil {
				t.Fatalf("err = %v; want no documents and an error with %q", err, tt.want)
			}
		})
	}
	if in, err := readInputsWithin([]string{file}, nil, limit, 10); err != nil || in.batch.Len() != 1 {
		t.Fatalf("half the bound: %v", err)
	}
}
