package datatest

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Sums are the SHA-256 sums of the files written, by name.
type Sums map[string][sha256.Size]byte

// WriteChecksummed writes files of random content and sizes (4 KiB to
// 1 MiB) under dir, each one and the directory synced, as a workload that
// wants its data kept writes it, and returns their sums.
func WriteChecksummed(t *testing.T, dir string, files int) Sums {
	t.Helper()
	sums := Sums{}
	for i := range files {
		b := make([]byte, 4<<10+(i*389<<10)%(1<<20))
		if _, err := rand.Read(b); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("file-%03d", i)
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		_, err = f.Write(b)
		if err := errors.Join(err, f.Sync(), f.Close()); err != nil {
			t.Fatal(err)
		}
		sums[name] = sha256.Sum256(b)
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil {
		t.Fatal(err)
	}
	return sums
}

// VerifyChecksums reads every file back under dir and compares its sum.
func VerifyChecksums(t *testing.T, dir string, sums Sums) {
	t.Helper()
	for name, want := range sums {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		if err := errors.Join(err, f.Close()); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := [sha256.Size]byte(h.Sum(nil)); got != want {
			t.Errorf("%s: checksum %x, want %x: the data changed", name, got[:8], want[:8])
		}
	}
}
