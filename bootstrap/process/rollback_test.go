package process

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tether/tether/actors/store"
)

// A store whose newer meta page is damaged is refused at start with what
// opening it would lose; AcceptRollback goes on, and the next start is
// clean.
func TestStartRefusesRollback(t *testing.T) {
	dir := t.TempDir()
	cleanupMounts(t, dir)
	e, err := startDurable(t, dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	damageNewerMeta(t, filepath.Join(dir, StoreFile))
	_, err = startDurable(t, dir, false)
	if !errors.Is(err, store.ErrRollback) || !errors.Is(err, ErrUntrusted) || !strings.Contains(err.Error(), "--accept-rollback") {
		t.Fatalf("start on a store with its newer meta page damaged: %v; want ErrRollback naming --accept-rollback", err)
	}
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Durable, cfg.Nodes, cfg.AcceptRollback = dir, true, 2, true
	cfg.LogOutput, cfg.LogLevel = testWriter{t}, "warn"
	e, err = StartEmbedded(cfg)
	if err != nil {
		t.Fatalf("start accepting the rollback: %v", err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	e, err = startDurable(t, dir, false)
	if err != nil {
		t.Fatalf("start after the rollback was accepted: %v", err)
	}
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
}

// damageNewerMeta overwrites the checksum of the bbolt file's newer meta
// page (the one of the higher transaction ID).
func damageNewerMeta(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const header, txid, sum = 16, 48, 56 // page header; offsets in the meta
	page := os.Getpagesize()
	newer := 0
	if binary.NativeEndian.Uint64(data[page+header+txid:]) > binary.NativeEndian.Uint64(data[header+txid:]) {
		newer = 1
	}
	binary.NativeEndian.PutUint64(data[newer*page+header+sum:], 0xbad)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// testWriter logs through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
