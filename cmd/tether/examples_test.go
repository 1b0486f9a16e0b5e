package main

import (
	"testing"
)

// The files the README's tour and docs/distributed.md's cluster by hand
// apply must parse.
func TestExamplesParse(t *testing.T) {
	for _, f := range []string{"../../examples/three-nodes.yaml", "../../examples/move-app-1.json", "../../examples/two-nodes.yaml"} {
		in, err := readInputs([]string{f}, nil)
		if err != nil || in.batch.Len() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
}
