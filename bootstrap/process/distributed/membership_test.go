package distributed

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/sirupsen/logrus"
	logtest "github.com/sirupsen/logrus/hooks/test"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/actors/store/etcdserver/etcdtest"
	"github.com/tether/tether/bootstrap/process/remoting/grpcstacks"
)

// One real member on a real etcd; the other members are records written
// straight into etcd (two Proto.Actor remotes in one process trip the race
// detector in Proto.Actor itself). What broke Proto.Actor's own provider
// under load is what this checks: the topology follows etcd, a malformed
// record is ignored, the watch survives an etcd restart, and a member
// whose lease is gone hears it while still counting itself (a member that
// dropped itself from its topology blocked itself for good).
func TestMembershipFollowsEtcd(t *testing.T) {
	etcd := etcdtest.Start(t)
	log, hook := logtest.NewNullLogger()
	log.SetOutput(io.Discard)
	lost := make(chan error, 1)
	const prefix = "/t/"
	keys := prefix + "cluster/" + ClusterName + "/"

	rc, err := RemoteConfig{}.build(log)
	if err != nil {
		t.Fatal(err)
	}
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	cl, err := newCluster(sys, etcd.Endpoints(), nil, prefix, rc, nil, 2*time.Second, log, func(err error) { lost <- err })
	if err != nil {
		t.Fatal(err)
	}
	self := sys.ID
	// The admin client is made once the member runs: Proto.Actor's remote
	// sets gRPC's global logger when it starts, racing with any gRPC
	// connection already open.
	var admin *clientv3.Client

	// The members as the last topology Proto.Actor published names them
	// (MemberList.Members is read without its lock).
	var mu sync.Mutex
	var current []string
	sub := sys.EventStream.Subscribe(func(ev any) {
		if top, ok := ev.(*cluster.ClusterTopology); ok {
			var ids []string
			for _, m := range top.Members {
				ids = append(ids, m.Id)
			}
			slices.Sort(ids)
			mu.Lock()
			current = ids
			mu.Unlock()
		}
	})
	t.Cleanup(func() { sys.EventStream.Unsubscribe(sub) })
	members := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(current)
	}
	waitMembers := func(what string, want ...string) {
		t.Helper()
		slices.Sort(want)
		deadline := time.Now().Add(15 * time.Second)
		for !slices.Equal(members(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: members %v, want %v", what, members(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	put := func(id string) {
		t.Helper()
		data, err := proto.Marshal(&cluster.Member{Id: id, Host: "127.0.0.1", Port: 1, Kinds: []string{"volume"}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.Put(ctx, keys+id, string(data)); err != nil {
			t.Fatal(err)
		}
	}
	del := func(id string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.Delete(ctx, keys+id); err != nil {
			t.Fatal(err)
		}
	}

	grpcstacks.WaitQuiet(t, 20*time.Second) // startCluster starts the remote, which writes gRPC's global logger
	if err := startCluster(cl, false); err != nil {
		t.Fatal(err)
	}
	admin, err = clientv3.New(clientv3.Config{Endpoints: etcd.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	t.Cleanup(func() {
		done := make(chan struct{})
		go func() { cl.Shutdown(true); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("cluster shutdown hung")
		}
	})
	waitMembers("alone", self)
	put("other-1")
	waitMembers("a member joined", self, "other-1")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err = admin.Put(ctx, keys+"junk", "not a member")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	put("other-2")
	waitMembers("a malformed record between two changes", self, "other-1", "other-2")
	if !hasMessage(hook, "malformed member record") {
		t.Error("the malformed record was not logged")
	}

	del("other-1")
	waitMembers("a member left", self, "other-2")

	if err := etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	put("other-3")
	waitMembers("a member joined after etcd restarted", self, "other-2", "other-3")

	// Our own lease is gone (as when etcd did not hear from us for the
	// TTL): we are told, and we still count ourselves.
	p := cl.Config.ClusterProvider.(*membership)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	_, err = admin.Revoke(ctx, p.lease)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-lost:
		t.Logf("told: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("a member whose lease was revoked was not told")
	}
	waitMembers("after our own key vanished", self, "other-2", "other-3")
	if cl.Remote.BlockList().IsBlocked(self) {
		t.Fatal("the member blocked itself")
	}
}

func hasMessage(h *logtest.Hook, sub string) bool {
	for _, e := range h.AllEntries() {
		if e.Level <= logrus.WarnLevel && strings.Contains(e.Message, sub) {
			return true
		}
	}
	return false
}
