package bootstrap

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/remote"
	"github.com/tether/tether/cloud/sim"
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
