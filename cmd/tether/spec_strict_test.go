package main

import (
	"strings"
	"testing"
)

// Fields have exact names and strict types, and an error speaks of the
// document (the field's path, what is allowed), never of Go types.
func TestStrictFields(t *testing.T) {
	const wl = "kind: Workload\nname: w\nnode: n1\n"
	for _, tt := range []struct{ name, in, want string }{
		{"readOnly yes", wl + "volumes:\n  - name: v\n    readOnly: \"yes\"\n", `in: document 1 (line 1): volumes[0].readOnly: want true or false, found the string "yes"`},
		{"readOnly yes unquoted", wl + "volumes:\n  - name: v\n    readOnly: yes\n", `volumes[0].readOnly: want true or false, found the string "yes"`},
		{"readOnly quoted false", wl + "volumes:\n  - name: v\n    readOnly: \"false\"\n", `volumes[0].readOnly: want true or false, found the string "false"`},
		{"readOnly json string", `{"kind":"Workload","name":"w","node":"n1","volumes":[{"name":"v","readOnly":"true"}]}`, `volumes[0].readOnly: want true or false, found the string "true"`},
		{"readOnly number", wl + "volumes:\n  - name: v\n    readOnly: 1\n", `volumes[0].readOnly: want true or false, found the number 1`},
		{"json key case", `{"Kind":"Node","name":"n"}`, `in: document 1 (offset 0): the object: unknown field "Kind" (want kind, name, accessMode`},
		{"yaml key case", "kind: Node\nName: n\n", `the object: unknown field "Name"`},
		{"nested key case", wl + "volumes:\n  - Name: v\n", `volumes[0]: unknown field "Name" (want name or readOnly)`},
		{"empty accessMode", "kind: Volume\nname: v\naccessMode: \"\"\n", `accessMode: empty: want ReadWriteOnce, ReadWriteMany or ReadOnlyMany, or leave accessMode out`},
		{"workload accessMode empty", wl + "accessMode: \"\"\n", `accessMode: empty`},
		{"empty node", "kind: Workload\nname: w\nnode: ''\n", `node: empty: want the name of a node, or leave node out`},
		{"empty volume name", wl + "volumes:\n  - name: ''\n", `volumes[0].name: empty: want the name of a volume`},
		{"number name", "kind: Node\nname: 12\n", `name: want a string (the object's name), found the number 12 (quote it: "12")`},
		{"unknown field", "kind: Node\nname: n\na: 1\n", `the object: unknown field "a" (want kind, name`},
		{"volumes not a list", wl + "volumes: v1\n", `volumes: want a list, found the string "v1"`},
		{"volume not an object", wl + "volumes: [v1]\n", `volumes[0]: want an object with name or readOnly, found the string "v1"`},
		{"mountOptions item", "kind: Volume\nname: v\nmountOptions: [1]\n", `mountOptions[0]: want a string (a mount option), found the number 1`},
		{"deep json", strings.Repeat("[", 100000), `invalid JSON: nested deeper than 32`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v; want %q", err, tt.want)
			}
			for _, goTerm := range []string{"main.", "docSpec", "Go value", "unmarshal"} {
				if strings.Contains(err.Error(), goTerm) {
					t.Fatalf("err = %v: speaks of Go (%q)", err, goTerm)
				}
			}
		})
	}
	// What is allowed still is: booleans, null as "left out", aliases.
	for _, in := range []string{
		wl + "volumes:\n  - name: v\n    readOnly: true\n  - name: u\n    readOnly: false\n",
		"kind: Volume\nname: v\naccessMode: ~\nfsType:\n",
		"kind: Volume\nname: &n v\n---\nkind: Workload\nname: w\nnode: n1\nvolumes: [{name: v}]\n",
		`{"kind":"Workload","name":"w","node":"n1","volumes":[{"name":"v","readOnly":true}]}`,
	} {
		if _, err := parse(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
