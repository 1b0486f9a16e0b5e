package distributed_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/cloud"
)

// The whole cluster with etcd over mutual TLS: etcd serves TLS clients
// with certificates of the fleet's CA only, members and agents dial it
// with --etcd-tls-*, and workloads reach their mounts. A client without
// a certificate is refused by etcd itself (ground truth: etcd, not our
// flags).
func TestFleetEtcdOverMutualTLS(t *testing.T) {
	r := startRigWith(t, 2, 2, func(c *distributed.FleetConfig) { c.EtcdTLS = true })
	eps := r.f.Etcd.Endpoints()
	if !strings.HasPrefix(eps[0], "https://") {
		t.Fatalf("etcd serves %v, want https", eps)
	}
	r.eventually("both nodes registered by their agents", 60*time.Second, func() bool { return len(r.nodeStatuses()) == 2 })
	r.place(map[string]cloud.NodeName{"w-1": "n1", "w-2": "n2"})
	r.converge("workloads over an etcd on mutual TLS", 60*time.Second)
	if ids := r.memberIDs(); len(ids) != 2 {
		t.Errorf("members in etcd: %v, want 2", ids)
	}

	// Without a client certificate, etcd refuses.
	ca, _, _ := r.f.EtcdClientTLS()
	noCert, err := certs.ClientConfig(ca, "", "", "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: eps, TLS: noCert, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = c.Get(ctx, "/tether/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		cancel()
		_ = c.Close()
	}
	if err == nil {
		t.Error("etcd answered a client without a certificate")
	}

	// A store dialed in plain text (the --etcd-tls-* flags forgotten)
	// fails naming the flags, not only "did not answer".
	_, err = store.OpenEtcd(store.EtcdConfig{Endpoints: []string{strings.Replace(eps[0], "https://", "http://", 1)}, DialTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "--etcd-tls-ca") {
		t.Errorf("a plain-text store on a TLS-only etcd: %v, want an error naming --etcd-tls-ca", err)
	}

	// An agent started with the flags forgotten, as by hand: it meets
	// the membership before any store, and says the same.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, binary, "agent", "--node", "n9", "--data-dir", t.TempDir(),
		"--etcd", strings.TrimPrefix(eps[0], "https://"), "--cloud", r.f.CloudAddr()).CombinedOutput()
	if err == nil || ctx.Err() != nil || !strings.Contains(string(out), "--etcd-tls-ca") {
		t.Errorf("an agent without --etcd-tls-* on a TLS-only etcd: %v, output ends %q; want it to exit naming --etcd-tls-ca", err, lastLine(string(out)))
	}
}

// lastLine is s's last non-empty line.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
