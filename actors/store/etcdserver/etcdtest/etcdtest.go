package etcdtest

import (
	"testing"

	"github.com/tether/tether/actors/store/etcdserver"
)

// Start runs an etcd with a data directory of t's and registers its Stop
// with t.Cleanup (before the directory is removed). If t failed, etcd's
// last output lines are logged.
func Start(t testing.TB) *etcdserver.Server {
	t.Helper()
	s, err := etcdserver.Start(etcdserver.Config{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("etcd %v, last output:\n%s", s.Endpoints(), s.LastOutput())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop etcd: %v", err)
		}
	})
	return s
}
