package main

import (
	"testing"
)

// The files the README's tour and docs/distributed.md's cluster by hand
// apply must parse.
func TestExamplesParse(t *testing.T) {
	for _, f := range []string{"../../examples/three-nodes.yaml", "../../examples/move-app-1.json", "../../examples/two-nodes.yaml"} {
		docs, _, err := readInputs([]string{f}, nil)
		if err != nil || len(docs) == 0 {
			t.Fatalf("%s: %d docs, %v", f, len(docs), err)
		}
	}
}
