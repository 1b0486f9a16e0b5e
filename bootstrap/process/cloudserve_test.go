package process

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/bootstrap/operator/certs"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
	"github.com/tether/tether/node/agent"
)

// A client of tether cloud serve is the cloud an API server provisions
// with and the one a node agent resolves its devices with.
var (
	_ cloud.Provisioner = (*remote.Client)(nil)
	_ agent.SimCloud    = (*remote.Client)(nil)
)

// tether cloud serve: a client in another process's place attaches through
// the service; the attachment is in the durable state once served; a
// second server on the same directory is refused; and the cloud comes back
// with it after a restart.
func TestServeCloud(t *testing.T) {
	dir := t.TempDir()
	serve := func() (addr string, stop func() error) {
		ctx, cancel := context.WithCancel(context.Background())
		addrs, done := make(chan string, 1), make(chan error, 1)
		go func() {
			done <- ServeCloud(ctx, CloudConfig{DataDir: dir, Addr: "127.0.0.1:0"}, io.Discard, func(a string) { addrs <- a })
		}()
		select {
		case addr = <-addrs:
		case err := <-done:
			cancel()
			t.Fatalf("cloud serve: %v", err)
		case <-time.After(10 * time.Second):
			cancel()
			t.Fatal("cloud serve did not start in 10s")
		}
		return addr, func() error { cancel(); return <-done }
	}
	addr, stop := serve()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	c, err := remote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.InstanceID(ctx, "n1"); !errors.Is(err, cloud.ErrNotFound) {
		t.Fatalf("InstanceID of an unknown node: %v, want not found", err)
	}

	// A second server on the same directory is refused before it touches it.
	err = ServeCloud(context.Background(), CloudConfig{DataDir: dir, Addr: "127.0.0.1:0"}, io.Discard, nil)
	if !errors.Is(err, ErrDataDirInUse) {
		t.Fatalf("second cloud serve on %s: %v, want ErrDataDirInUse", dir, err)
	}
	if err := ServeCloud(context.Background(), CloudConfig{DataDir: t.TempDir(), Addr: "0.0.0.0:0"}, io.Discard, nil); err == nil {
		t.Fatal("cloud serve on 0.0.0.0 without AllowRemote was accepted")
	}
	stopped = true
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}

	// The state written through the service is the cloud's: seed it
	// directly (an instance and a volume), serve again, attach remotely.
	cl, err := sim.Open(sim.Config{StatePath: dir + "/cloud-state.json"})
	if err != nil {
		t.Fatal(err)
	}
	inst, err := cl.AddInstanceChecked("n1")
	if err == nil {
		err = cl.CreateVolumeChecked("v1", cloud.Exclusive)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	addr, stop = serve()
	stopped = false
	c2, err := remote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if got, err := c2.InstanceID(ctx, "n1"); err != nil || got != inst {
		t.Fatalf("InstanceID(n1) = %q, %v; want %q", got, err, inst)
	}
	if _, err := c2.Attach(ctx, "v1", inst); err != nil {
		t.Fatalf("attach through the service: %v", err)
	}
	stopped = true
	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	back, err := sim.Open(sim.Config{StatePath: dir + "/cloud-state.json"})
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if got := back.Attachments()["v1"]; len(got) != 1 || got[0] != inst {
		t.Fatalf("after serving: v1 attached to %v, want [%s]", got, inst)
	}
}

// With mutual TLS a client with a certificate of the CA is served, and one
// without (plain text, or TLS without a client certificate) is refused.
// Beyond loopback, serving without mutual TLS is refused before anything
// starts.
func TestServeCloudMutualTLS(t *testing.T) {
	pki := t.TempDir()
	if _, err := certs.WriteSet(pki, certs.SetOptions{Hosts: []string{"127.0.0.1"}, ValidFor: time.Hour, Now: time.Now()}); err != nil {
		t.Fatal(err)
	}
	file := func(n string) string { return filepath.Join(pki, n) }
	tlsFiles := TLSFiles{Cert: file(certs.ServerFile), Key: file(certs.ServerKeyFile), ClientCA: file(certs.CAFile)}
	for _, tc := range []struct {
		name string
		cfg  CloudConfig
		want error
	}{
		{"remote without TLS", CloudConfig{Addr: "0.0.0.0:0", AllowRemote: true}, ErrCloudExposed},
		{"remote with TLS but no client CA", CloudConfig{Addr: "0.0.0.0:0", AllowRemote: true, TLS: TLSFiles{Cert: tlsFiles.Cert, Key: tlsFiles.Key}}, ErrCloudExposed},
		{"remote without --allow-remote", CloudConfig{Addr: "0.0.0.0:0", TLS: tlsFiles}, ErrNotLoopback},
		{"a key without a certificate", CloudConfig{Addr: "127.0.0.1:0", TLS: TLSFiles{Key: tlsFiles.Key}}, ErrTLSFiles},
	} {
		dir := t.TempDir()
		tc.cfg.DataDir = dir
		if err := ServeCloud(context.Background(), tc.cfg, io.Discard, nil); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: refused, but %s holds %d entries", tc.name, dir, len(entries))
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- ServeCloud(ctx, CloudConfig{DataDir: t.TempDir(), Addr: "127.0.0.1:0", TLS: tlsFiles}, io.Discard, func(a string) { addrs <- a })
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("cloud serve: %v", err)
	}
	dial := func(tc *tls.Config) error {
		creds := insecure.NewCredentials()
		if tc != nil {
			creds = credentials.NewTLS(tc)
		}
		c, err := remote.Dial(addr, grpc.WithTransportCredentials(creds))
		if err != nil {
			return err
		}
		return c.Close()
	}
	good, err := certs.ClientConfig(file(certs.CAFile), file(certs.ClientFile), file(certs.ClientKeyFile), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(good); err != nil {
		t.Fatalf("a client with the CA's certificate: %v", err)
	}
	admin, err := remote.Dial(addr, grpc.WithTransportCredentials(credentials.NewTLS(good)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.AddInstanceChecked("n1"); err != nil {
		t.Errorf("the admin side over mutual TLS: %v", err)
	}
	if err := admin.Close(); err != nil {
		t.Fatal(err)
	}
	noCert, err := certs.ClientConfig(file(certs.CAFile), "", "", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := dial(noCert); err == nil {
		t.Error("a TLS client without a certificate was served")
	}
	if err := dial(nil); err == nil {
		t.Error("a plain-text client was served")
	}
}

// tether cloud serve serves the sim's admin side on the same address: an
// API server provisions through it, a node agent finds the content of its
// devices on this machine, a checker watches the attachments until the
// cloud stops.
func TestServeCloudAdmin(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	addrs, done := make(chan string, 1), make(chan error, 1)
	go func() {
		done <- ServeCloud(ctx, CloudConfig{DataDir: dir, Addr: "127.0.0.1:0"}, io.Discard, func(a string) { addrs <- a })
	}()
	stopped := false
	stop := func() error { stopped = true; cancel(); return <-done }
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("cloud serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("cloud serve did not start in 10s")
	}
	c, err := remote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	inst, err := c.AddInstanceChecked("n1")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateVolumesUncommitted([]cloud.VolumeSpec{{ID: "v1", Mode: cloud.Exclusive}}); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitVolume("v1"); err != nil {
		t.Fatal(err)
	}

	events, watched := make(chan remote.Event, 16), make(chan error, 1)
	go func() {
		watched <- c.Watch(context.Background(), func(ev remote.Event) error { events <- ev; return nil })
	}()
	next := func() remote.Event {
		t.Helper()
		select {
		case ev := <-events:
			return ev
		case err := <-watched:
			t.Fatalf("the watch ended: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("no watch event in 10s")
		}
		return remote.Event{}
	}
	if ev := next(); !ev.Synced {
		t.Fatalf("first event %+v, want the synced mark of an empty snapshot", ev)
	}
	callCtx, callCancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer callCancel()
	dev, err := c.Attach(callCtx, "v1", inst)
	if err != nil {
		t.Fatal(err)
	}
	if ev := next(); ev.Change.Volume != "v1" || ev.Change.Instance != inst || !ev.Change.Attached || ev.Change.Reason != sim.ReasonAttach {
		t.Errorf("event %+v, want the attach of v1 to %s", ev, inst)
	}

	devices := agent.SimDevices{Cloud: c, Node: "n1"}
	src, release, err := devices.Source(callCtx, "v1", dev)
	release()
	if want, _ := filepath.Abs(filepath.Join(dir, "cloud", "v1")); err != nil || src != want {
		t.Errorf("device source of v1 = %q, %v; want %q", src, err, want)
	}
	if err := c.DeleteVolume("v1"); !errors.Is(err, sim.ErrVolumeInUse) {
		t.Errorf("DeleteVolume of an attached volume: %v, want sim.ErrVolumeInUse", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case err := <-watched:
		if !errors.Is(err, remote.ErrWatchEnded) {
			t.Errorf("the watch ended with %v, want remote.ErrWatchEnded", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not end in 10s once the cloud stopped")
	}
}

// tether cloud serve --attach-limit: the instances the served cloud
// creates take that many volumes, and a third attach to one of limit 2 is
// refused with the sim's class (cloud.ErrLimitReached, over the wire). An
// instance keeps the limit it was created with when the cloud is served
// again with another: the flag applies to instances created from then on.
func TestServeCloudAttachLimit(t *testing.T) {
	dir := t.TempDir()
	serve := func(limit int) (*remote.Client, func()) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		addrs, done := make(chan string, 1), make(chan error, 1)
		cfg := CloudConfig{DataDir: dir, Addr: "127.0.0.1:0", Sim: sim.Config{AttachLimit: limit}}
		go func() { done <- ServeCloud(ctx, cfg, io.Discard, func(a string) { addrs <- a }) }()
		stopped := false
		stop := func() {
			if !stopped {
				stopped = true
				cancel()
				if err := <-done; err != nil {
					t.Errorf("stop: %v", err)
				}
			}
		}
		t.Cleanup(stop)
		var addr string
		select {
		case addr = <-addrs:
		case err := <-done:
			stopped = true
			cancel()
			t.Fatalf("cloud serve: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("cloud serve did not start in 10s")
		}
		c, err := remote.Dial(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		return c, func() { _ = c.Close(); stop() }
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	attach := func(c *remote.Client, inst cloud.InstanceID, vols ...cloud.VolumeID) error {
		t.Helper()
		for _, v := range vols {
			if _, err := c.Attach(ctx, v, inst); err != nil {
				return err
			}
		}
		return nil
	}

	c, stop := serve(2)
	n1, err := c.AddInstanceChecked("n1")
	if err != nil {
		t.Fatal(err)
	}
	ids := []cloud.VolumeID{"v1", "v2", "v3", "v4", "v5", "v6"}
	var vols []cloud.VolumeSpec
	for _, v := range ids {
		vols = append(vols, cloud.VolumeSpec{ID: v, Mode: cloud.Exclusive})
	}
	if err := c.CreateVolumesUncommitted(vols); err != nil {
		t.Fatal(err)
	}
	if err := c.CommitVolumes(ids); err != nil {
		t.Fatal(err)
	}
	if err := attach(c, n1, "v1", "v2"); err != nil {
		t.Fatalf("two attaches under --attach-limit 2: %v", err)
	}
	err = attach(c, n1, "v3")
	if !errors.Is(err, cloud.ErrLimitReached) || cloud.Classify(err) != cloud.KindLimitReached {
		t.Fatalf("a third attach under --attach-limit 2: %v, want %v", err, cloud.ErrLimitReached)
	}
	stop()

	// Served again with 3: n1 keeps 2, a new instance takes 3.
	c, stop = serve(3)
	defer stop()
	if err := attach(c, n1, "v3"); !errors.Is(err, cloud.ErrLimitReached) {
		t.Fatalf("a third attach to n1, created under limit 2, served with 3: %v, want %v", err, cloud.ErrLimitReached)
	}
	n2, err := c.AddInstanceChecked("n2")
	if err != nil {
		t.Fatal(err)
	}
	if err := attach(c, n2, "v3", "v4", "v5"); err != nil {
		t.Fatalf("three attaches to n2, created under limit 3: %v", err)
	}
	if err := attach(c, n2, "v6"); !errors.Is(err, cloud.ErrLimitReached) {
		t.Fatalf("a fourth attach to n2 under limit 3: %v, want %v", err, cloud.ErrLimitReached)
	}
}
