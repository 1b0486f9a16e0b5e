package csitest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	spec "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// events collects an Observed driver's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

// lines are the events as "phase Method volume node [before -> after] err".
func (e *events) lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.all {
		s := fmt.Sprintf("%s %s %s %s", ev.Phase, ev.Call.Method, ev.Call.Volume, ev.Call.Node)
		if ev.Phase == Done {
			s += fmt.Sprintf(" %v -> %v applied=%v err=%v", ev.Before, ev.After, ev.Applied, status.Code(ev.Err))
		}
		out = append(out, s)
	}
	return out
}

// dialObserved dials socket as a CO would; closed at cleanup.
func dialObserved(t *testing.T, socket string) (spec.ControllerClient, spec.NodeClient) {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return spec.NewControllerClient(conn), spec.NewNodeClient(conn)
}

func publishReq(vol, node string) *spec.ControllerPublishVolumeRequest {
	return &spec.ControllerPublishVolumeRequest{VolumeId: vol, NodeId: node, VolumeCapability: mount("ext4")}
}

// Every mutating call is heard when it arrives and when it is done,
// with what it changed; a call Before refuses is heard too (Applied
// false, nothing changed); a reply Reply loses leaves the effect in
// place; CallSeq follows one call from Before to Reply.
func TestObservedHearsEachChangeInOrder(t *testing.T) {
	var ev events
	var mu sync.Mutex
	seen := map[uint64]string{} // CallSeq in Before -> method
	refuse := map[string]bool{"ControllerUnpublishVolume": true}
	o := NewObserved(Config{Nodes: map[string]int64{"a": 0, "b": 0}, MultiAttach: true,
		Before: func(ctx context.Context, method string) error {
			mu.Lock()
			defer mu.Unlock()
			if seq := CallSeq(ctx); seq != 0 {
				seen[seq] = method
			}
			if refuse[method] {
				return status.Error(codes.Internal, "injected")
			}
			return nil
		}}, Hooks{Observe: ev.add, Reply: func(ctx context.Context, c Call, err error) error {
		mu.Lock()
		defer mu.Unlock()
		if seen[CallSeq(ctx)] != c.Method {
			t.Errorf("Reply of %s: CallSeq %d is %q in Before", c.Method, CallSeq(ctx), seen[CallSeq(ctx)])
		}
		if c.Node == "b" && err == nil {
			return status.Error(codes.Unavailable, "reply lost")
		}
		return err
	}})
	o.AddVolume("v")
	ctl, _ := dialObserved(t, o.Serve(t, ""))
	ctx := context.Background()
	if _, err := ctl.ControllerPublishVolume(ctx, publishReq("v", "a")); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.ControllerPublishVolume(ctx, publishReq("v", "b")); status.Code(err) != codes.Unavailable {
		t.Fatalf("publish to b: %v, want the reply lost", err)
	}
	if _, err := ctl.ControllerUnpublishVolume(ctx, &spec.ControllerUnpublishVolumeRequest{VolumeId: "v", NodeId: "a"}); status.Code(err) != codes.Internal {
		t.Fatalf("unpublish: %v, want Before's error", err)
	}
	want := []string{
		"received ControllerPublishVolume v a",
		"done ControllerPublishVolume v a [] -> [a] applied=true err=OK",
		"received ControllerPublishVolume v b",
		"done ControllerPublishVolume v b [a] -> [a b] applied=true err=OK",
		"received ControllerUnpublishVolume v a",
		"done ControllerUnpublishVolume v a [] -> [a b] applied=false err=Internal",
	}
	if got := ev.lines(); !slices.Equal(got, want) {
		t.Fatalf("events:\n%q\nwant:\n%q", got, want)
	}
	if got := o.PublishedTo("v"); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("published to %v: the lost reply's effect must stay", got)
	}
}

// A Server stops serving and serves again on its socket, the driver's
// state kept, and a CO's connection finds it again; a call hanging in
// Before when it stops is cancelled, and whatever it does is done before
// Stop returns.
func TestServerRestartKeepsState(t *testing.T) {
	dir, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	hang := make(chan struct{}, 1)
	o := NewObserved(Config{Nodes: map[string]int64{"a": 0}, StageUnstage: true,
		Before: func(ctx context.Context, method string) error {
			if method == "ControllerUnpublishVolume" {
				hang <- struct{}{}
				<-ctx.Done()
				return nil // would unpublish, were the call not cancelled by then
			}
			return nil
		}}, Hooks{})
	o.AddVolume("v")
	s := o.NewServer(filepath.Join(dir, "a.sock"), "a")
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ctl, _ := dialObserved(t, s.Socket())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := ctl.ControllerPublishVolume(ctx, publishReq("v", "a")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ctl.ControllerUnpublishVolume(ctx, &spec.ControllerUnpublishVolumeRequest{VolumeId: "v", NodeId: "a"})
		done <- err
	}()
	<-hang
	s.Stop()
	if err := <-done; status.Code(err) != codes.Unavailable && status.Code(err) != codes.Canceled {
		t.Fatalf("the call in progress at the stop: %v, want UNAVAILABLE", err)
	}
	if s.Serving() {
		t.Fatal("serving after Stop")
	}
	// The hung call ran its handler to the end before Stop returned:
	// cancelled, its unpublish still went through (Before said nil).
	if got := o.PublishedTo("v"); len(got) != 0 {
		t.Fatalf("published to %v after the hung unpublish's handler returned", got)
	}
	if _, err := ctl.ControllerPublishVolume(ctx, publishReq("v", "a")); err == nil {
		t.Fatal("a call succeeded while the server is stopped")
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := ctl.ControllerPublishVolume(ctx, publishReq("v", "a"), grpc.WaitForReady(true)); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if got := o.PublishedTo("v"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("published to %v, want [a]", got)
	}
}
