package csitest

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/kubernetes-csi/csi-test/v5/pkg/sanity"
	"go.uber.org/goleak"
)

// ginkgo's interrupt handler lives as long as the process, on purpose.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
}

// TestSanity runs csi-test's sanity suite against the fake, served as
// tether's tests serve it: it proves the fake a valid CSI driver, so that
// tests passing against it say something about real ones. Controller and
// node share the socket, as sanity expects; one node, with an attach limit
// for the limit test.
func TestSanity(t *testing.T) {
	if f := flag.Lookup("test.count"); f != nil && f.Value.String() != "1" {
		t.Skip("ginkgo refuses go test -count other than 1")
	}
	d := New(Config{Nodes: map[string]int64{"node-1": 3}, List: true, ListPublished: true, GetVolume: true, StageUnstage: true, PageSize: 2})
	socket := d.Serve(t, "node-1")
	dir := t.TempDir()
	cfg := sanity.NewTestConfig()
	cfg.Address = socket
	cfg.TargetPath = filepath.Join(dir, "target") // sanity creates both
	cfg.StagingPath = filepath.Join(dir, "staging")
	cfg.TestNodeVolumeAttachLimit = true
	cfg.IdempotentCount = 3
	sanity.Test(t, cfg)
}
