package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain removes the binary the tests built (binary), which no single
// test's Cleanup can: they share it.
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}
