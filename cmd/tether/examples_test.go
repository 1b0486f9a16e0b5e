package main

import (
	"os"
	"testing"
)

// The files the README's tour applies must parse.
func TestExamplesParse(t *testing.T) {
	for _, f := range []string{"../../examples/three-nodes.yaml", "../../examples/move-app-1.json"} {
		r, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := parseDocuments(r)
		r.Close()
		if err != nil || len(docs) == 0 {
			t.Fatalf("%s: %d docs, %v", f, len(docs), err)
		}
	}
}
