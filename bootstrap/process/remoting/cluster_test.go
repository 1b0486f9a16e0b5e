package remoting

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	logtest "github.com/sirupsen/logrus/hooks/test"

	"github.com/tether/tether/actors/runtime/slogrus"
	"github.com/tether/tether/messages"
)

// clusterEnv, set to the JSON of TLSFiles, makes this test binary run
// runCluster instead of the tests.
const clusterEnv = "REMOTING_TEST_CLUSTER"

// A real two-member cluster over mutual TLS, every member screening what
// it receives: gossip, identity placement and grain requests pass, and
// nothing is rejected. Both members run in one child process, which ends
// what in-process cluster shutdown would leak. Two remotes in one process
// trip the race detector in Proto.Actor itself (remote.Start sets gRPC's
// global logger while the other member's gRPC runs), so the child ignores
// data races (GORACE exitcode=0); the node tests check this package's
// code under the race detector, one remote per process.
func TestClusterThroughScreen(t *testing.T) {
	t.Parallel()
	files, err := json.Marshal(tlsFiles(certSet(t, "127.0.0.1")))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clusterEnv+"="+string(files), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" exitcode=0 report_bugs=0 atexit_sleep_ms=0"))
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cluster: %v: %s", err, out.String())
		}
	case <-time.After(4 * wait):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("cluster did not finish in time: %s", out.String())
	}
}

// runCluster starts two members and has the first ask grains on both.
func runCluster(files string) int {
	var f TLSFiles
	if err := json.Unmarshal([]byte(files), &f); err != nil {
		fmt.Println(err)
		return 2
	}
	agent := test.NewInMemAgent()
	var members []*cluster.Cluster
	var hooks []*logtest.Hook
	for range 2 {
		c, h, err := startMember(f, agent)
		if err != nil {
			fmt.Println(err)
			return 1
		}
		members, hooks = append(members, c), append(hooks, h)
	}
	defer func() {
		for _, c := range members {
			c.Shutdown(false)
		}
	}()
	if err := askAcross(members); err != nil {
		fmt.Println(err)
		return 1
	}
	for i, h := range hooks {
		for _, e := range h.AllEntries() {
			fmt.Printf("member %d logged: %s %v\n", i, e.Message, e.Data)
			return 1
		}
	}
	return 0
}

func startMember(f TLSFiles, agent *test.InMemAgent) (*cluster.Cluster, *logtest.Hook, error) {
	l, h := logtest.NewNullLogger()
	l.SetOutput(io.Discard)
	rc, err := Configure(Config{Addr: loopback, TLS: f, Log: l})
	if err != nil {
		return nil, nil, err
	}
	grain := actor.PropsFromFunc(func(ctx actor.Context) {
		if _, ok := ctx.Message().(*messages.Heartbeat); ok {
			ctx.Respond(&messages.Heartbeat{Node: ctx.Self().Address})
		}
	})
	sys := actor.NewActorSystem(actor.WithLoggerFactory(slogrus.DiscardLoggerFactory()))
	cfg := cluster.Configure("remoting-test", test.NewTestProvider(agent), disthash.New(), rc,
		cluster.WithKinds(cluster.NewKind("echo", grain)))
	c := cluster.New(sys, cfg)
	c.StartMember()
	return c, h, nil
}

// askAcross waits until the first member sees both, then asks grains
// until both members have answered.
func askAcross(members []*cluster.Cluster) error {
	deadline := time.Now().Add(3 * wait)
	for members[0].MemberList.Members().Len() < 2 || members[1].MemberList.Members().Len() < 2 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the members never saw each other")
		}
		time.Sleep(10 * time.Millisecond)
	}
	answered := map[string]bool{}
	for i := 0; len(answered) < 2; i++ {
		if i == 64 || time.Now().After(deadline) {
			return fmt.Errorf("grains answered from %v only", answered)
		}
		res, err := members[0].Request(fmt.Sprintf("grain-%d", i), "echo", &messages.Heartbeat{Node: "ask"}, cluster.WithTimeout(wait))
		if err != nil {
			return fmt.Errorf("grain-%d: %w", i, err)
		}
		hb, ok := res.(*messages.Heartbeat)
		if !ok {
			return fmt.Errorf("grain-%d answered %T", i, res)
		}
		answered[hb.Node] = true
	}
	return nil
}
