package store

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/tether/tether/actors/store/etcdserver"
)

// One etcd serves the whole test binary: started by the first test that
// needs it, stopped by TestMain when the tests end. Each store opened on
// it gets a prefix of its own, so the tests share nothing else.
var shared struct {
	once sync.Once
	dir  string
	srv  *etcdserver.Server
	err  error
	n    atomic.Int64 // prefixes handed out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	// Every store closed, every etcd stopped: nothing may still run.
	if err := goleak.Find(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
		code = 1
	}
	os.Exit(code)
}

// sharedEtcd returns the test binary's etcd, starting it if needed; a
// failure to start it (etcd not installed) fails t.
func sharedEtcd(t testing.TB) *etcdserver.Server {
	t.Helper()
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "tether-store-etcd-")
		if shared.err == nil {
			shared.srv, shared.err = etcdserver.Start(etcdserver.Config{Dir: shared.dir})
		}
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.srv
}

// freshPrefix is a prefix no other store of this test binary uses.
func freshPrefix() string { return fmt.Sprintf("/tether-test/%d/", shared.n.Add(1)) }

// openEtcd opens a store on srv under prefix (cfg's other fields kept),
// closed when t ends.
func openEtcd(t testing.TB, srv *etcdserver.Server, cfg EtcdConfig) *Etcd {
	t.Helper()
	cfg.Endpoints = srv.Endpoints()
	e, err := OpenEtcd(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

// freshEtcd is an empty store on the shared etcd.
func freshEtcd(t testing.TB) *Etcd {
	t.Helper()
	return openEtcd(t, sharedEtcd(t), EtcdConfig{Prefix: freshPrefix()})
}
