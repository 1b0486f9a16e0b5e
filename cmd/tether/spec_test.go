package main

import (
	"strings"
	"testing"
)

func TestParseDocuments(t *testing.T) {
	good := []struct {
		name, in string
		n        int
	}{
		{"yaml documents", "kind: Node\nname: n1\n---\nkind: Volume\nname: v1\naccessMode: ReadWriteMany\n---\nkind: Workload\nname: w1\nnode: n1\nvolumes:\n  - name: v1\n    readOnly: true\n", 3},
		{"json object", `{"kind":"Node","name":"n1"}`, 1},
		{"json array", `[{"kind":"Node","name":"n1"},{"kind":"Volume","name":"v1"}]`, 2},
		{"json stream", `{"kind":"Node","name":"n1"} {"kind":"Node","name":"n2"}`, 2},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := parseDocuments(strings.NewReader(tt.in))
			if err != nil || len(docs) != tt.n {
				t.Fatalf("got %d docs, err %v; want %d", len(docs), err, tt.n)
			}
		})
	}
	bad := []struct {
		name, in, want string
	}{
		{"malformed yaml", "kind: Node\nname: [n1\n", "document 1: invalid YAML"},
		{"malformed json", `{"kind":"Node","name":}`, "invalid JSON"},
		{"unknown field yaml", "kind: Node\nname: n1\ncolor: blue\n", "field color not found"},
		{"unknown field json", `{"kind":"Node","name":"n1","color":"blue"}`, `unknown field "color"`},
		{"unknown kind", "kind: Pod\nname: p\n", `unknown kind "Pod"`},
		{"missing kind", "name: p\n", "kind is required"},
		{"missing name", "kind: Node\n", "name is required"},
		{"field of another kind", "kind: Volume\nname: v\nnode: n1\n", "workload fields"},
		{"workload without node", "kind: Workload\nname: w\n", "node is required"},
		{"duplicate names", "kind: Node\nname: n1\n---\nkind: Node\nname: n1\n", "node/n1 is also document 1"},
		{"empty", "", "no documents"},
		{"oversized", "kind: Node\nname: n1\n#" + strings.Repeat("x", maxFileBytes), "larger than"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := parseDocuments(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
			if docs != nil {
				t.Fatalf("documents returned with an error: %v", docs)
			}
		})
	}
}
