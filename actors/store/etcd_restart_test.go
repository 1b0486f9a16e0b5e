package store

import (
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/actors/store/etcdserver/etcdtest"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/testkit"
)

// freeLoopbackPort returns an address of 127.0.0.1 nobody listens on.
func freeLoopbackPort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// fillStore writes some of everything.
func fillStore(t *testing.T, s Store) {
	t.Helper()
	must(t, s.Apply([]Op{
		{PutVolume: &VolumeSpec{ID: "v1", Mode: cloud.MultiNode}},
		{PutNode: &NodeSpec{Name: "n1"}},
		{PutWorkload: &Workload{UID: "a", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
		{PutWorkload: &Workload{UID: "b", Node: "n1", Volumes: []cloud.VolumeID{"v1"}}},
	}))
	must(t, s.DeleteWorkload("a"))
	must(t, s.PutNodeStatus(nodestatus.Status{Name: "n1", Ready: true,
		VolumesAttached: map[cloud.VolumeID]string{"v1": "/dev/a"}}))
	must(t, s.PutIntent(Intent{Volume: "v1", Node: "n1", Op: 3, Attach: true, Deadline: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}))
}

// TestEtcdSurvivesRestart: what was acknowledged before etcd stopped
// cleanly or was killed while idle is there after its restart, the
// client made before reconnects by itself, and the counters go on. While
// etcd is down, calls fail within their timeout, naming the endpoint.
func TestEtcdSurvivesRestart(t *testing.T) {
	t.Run("uncached", func(t *testing.T) { testEtcdSurvivesRestart(t, false) })
	t.Run("cached", func(t *testing.T) { testEtcdSurvivesRestart(t, true) })
}

// testEtcdSurvivesRestart: with cache, the cache's watch resumes, and
// what another client writes once etcd is back is read at once.
func testEtcdSurvivesRestart(t *testing.T, cache bool) {
	srv := etcdtest.Start(t)
	s := openEtcd(t, srv, EtcdConfig{Timeout: time.Second, Cache: cache})
	other := openEtcd(t, srv, EtcdConfig{Timeout: time.Second})
	fillStore(t, s)
	for i, end := range []struct {
		name string
		end  func() error
	}{
		{"stop", srv.Stop},
		{"kill", srv.Kill},
	} {
		t.Run(end.name, func(t *testing.T) {
			before := snap(t, s)
			intents, err := s.Intents("v1")
			must(t, err)
			must(t, end.end())

			start := time.Now()
			_, err = s.Revision()
			if err == nil || !strings.Contains(err.Error(), srv.Endpoints()[0]) {
				t.Fatalf("Revision with etcd down = %v, want an error naming %s", err, srv.Endpoints()[0])
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Fatalf("Revision with etcd down took %v, timeout 1s", took)
			}
			if err := s.PutVolume(VolumeSpec{ID: "down"}); err == nil {
				t.Fatal("a write with etcd down succeeded")
			}

			must(t, srv.Restart())
			testkit.EventuallyNil(t, 20*time.Second, func() error { _, err := s.Revision(); return err }, "Revision: still failing after etcd came back")
			if after := snap(t, s); !reflect.DeepEqual(after, before) {
				t.Fatalf("after restart:\n %+v\nwant\n %+v", after, before)
			}
			if got, _ := s.Intents("v1"); !reflect.DeepEqual(got, intents) {
				t.Fatalf("intents after restart %+v, want %+v", got, intents)
			}
			must(t, s.PutWorkload(Workload{UID: "c", Node: "n1"}))
			if c, _, _ := s.Workload("c"); c.Seq != uint64(3+i) {
				t.Fatalf("Seq after restart = %d, want %d", c.Seq, 3+i)
			}
			if rev, _ := s.Revision(); rev != before.Rev+1 {
				t.Fatalf("Revision after restart = %d, want %d", rev, before.Rev+1)
			}
			must(t, s.DeleteWorkload("c"))
			// The other client reconnects on its own schedule: a put is
			// idempotent, so it may be tried until it lands.
			testkit.EventuallyNil(t, 20*time.Second, func() error {
				return other.PutVolume(VolumeSpec{ID: cloud.VolumeID("after-" + end.name)})
			}, "the other client's put: still failing after etcd came back")
			if _, ok, err := s.Volume(cloud.VolumeID("after-" + end.name)); !ok || err != nil {
				t.Fatalf("a volume another client wrote after the restart: found %v, %v", ok, err)
			}
			must(t, other.DeleteVolume(cloud.VolumeID("after-"+end.name)))
		})
	}
}
