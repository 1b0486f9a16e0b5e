package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"

	"github.com/tether/tether/messages"
)

// pagedServer serves workloads w00..w<n-1> in pages of at most the limit
// asked and never more than maxPage (as a byte budget would), its continue
// the last name sent; it records what it was asked.
type pagedServer struct {
	messages.UnimplementedTetherServer
	names   []string
	maxPage int

	mu   sync.Mutex
	reqs []string // "limit/continue"
}

func (s *pagedServer) Get(_ context.Context, req *messages.GetRequest) (*messages.GetResponse, error) {
	s.mu.Lock()
	s.reqs = append(s.reqs, fmt.Sprintf("%d/%s", req.Limit, req.Continue))
	s.mu.Unlock()
	i, _ := slices.BinarySearch(s.names, req.Continue)
	if i < len(s.names) && s.names[i] == req.Continue {
		i++
	}
	n := min(int(req.Limit), s.maxPage)
	if req.Limit == 0 {
		n = s.maxPage
	}
	res := &messages.GetResponse{}
	for _, name := range s.names[i:min(i+n, len(s.names))] {
		res.Workloads = append(res.Workloads, &messages.WorkloadInfo{Spec: &messages.WorkloadDoc{Name: name, Node: "n1"}, Phase: "Running", ObjectUid: "uid-" + name})
	}
	if end := i + n; end < len(s.names) {
		res.Continue = s.names[end-1]
	}
	return res, nil
}

func servePaged(t *testing.T, n, maxPage int) (*pagedServer, string) {
	t.Helper()
	s := &pagedServer{maxPage: maxPage}
	for i := range n {
		s.names = append(s.names, fmt.Sprintf("w%02d", i))
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	messages.RegisterTetherServer(g, s)
	done := make(chan error, 1)
	go func() { done <- g.Serve(lis) }()
	t.Cleanup(func() {
		g.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return s, lis.Addr().String()
}

func runGet(t *testing.T, addr string, args ...string) (stdout, stderr string) {
	t.Helper()
	cmd := getCommand()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(append(args, "--addr", addr, "--token", "t"))
	if err := cmd.Execute(); err != nil {
		t.Fatalf("get %v: %v", args, err)
	}
	return out.String(), errOut.String()
}

// get follows the pages to the end, whatever size the server makes them.
func TestGetFollowsPages(t *testing.T) {
	s, addr := servePaged(t, 10, 2)
	out, errOut := runGet(t, addr, "workloads", "--chunk-size", "3")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[1], "w00 ") || !strings.HasPrefix(lines[10], "w09 ") || errOut != "" {
		t.Fatalf("table:\n%s\nstderr %q; want a header and w00..w09", out, errOut)
	}
	want := []string{"3/", "3/w01", "3/w03", "3/w05", "3/w07"}
	if !slices.Equal(s.reqs, want) {
		t.Fatalf("requests %v, want %v", s.reqs, want)
	}
}

// --limit stops early; the JSON's continue resumes after the last listed.
func TestGetLimitStopsEarly(t *testing.T) {
	s, addr := servePaged(t, 10, 100)
	out, _ := runGet(t, addr, "workloads", "-o", "json", "--chunk-size", "2", "--limit", "5")
	var res struct {
		Workloads []struct {
			ObjectUID string `json:"object_uid"`
		} `json:"workloads"`
		Continue string `json:"continue"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if len(res.Workloads) != 5 || res.Workloads[4].ObjectUID != "uid-w04" || res.Continue != "w04" {
		t.Fatalf("json: %+v; want w00..w04 with UIDs, continue w04", res)
	}
	if want := []string{"2/", "2/w01", "1/w03"}; !slices.Equal(s.reqs, want) {
		t.Fatalf("requests %v, want %v", s.reqs, want)
	}
	_, errOut := runGet(t, addr, "workloads", "--limit", "3")
	if !strings.Contains(errOut, "more remain") {
		t.Fatalf("table with --limit: stderr %q, want a note that more remain", errOut)
	}
}
