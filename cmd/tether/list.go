package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc"

	"github.com/tether/tether/messages"
)

// pageFlags say how get lists: in pages of chunkSize (the server may send
// fewer per page, to stay under its byte budget), up to limit in all.
type pageFlags struct {
	chunkSize int
	limit     int
}

func (p *pageFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&p.chunkSize, "chunk-size", 500, "list in pages of at most this many objects, following them to the end (0: the server's default page size)")
	fs.IntVar(&p.limit, "limit", 0, "list at most this many objects (0: all); with -o json, continue resumes after them")
}

func (p pageFlags) check() error {
	if p.chunkSize < 0 || p.limit < 0 {
		return usageError{fmt.Errorf("--chunk-size %d, --limit %d: want 0 or more", p.chunkSize, p.limit)}
	}
	return nil
}

// getFunc is TetherClient.Get.
type getFunc func(context.Context, *messages.GetRequest, ...grpc.CallOption) (*messages.GetResponse, error)

// listAll follows the pages of req, each call bounded by timeout, and
// returns them as one response. Its continue is empty unless --limit cut
// the list short: then it resumes after the last object listed.
func listAll(get getFunc, req *messages.GetRequest, p pageFlags, timeout time.Duration) (*messages.GetResponse, error) {
	all := &messages.GetResponse{}
	for {
		req.Limit = int32(p.chunkSize)
		if left := p.limit - listed(all); p.limit > 0 && (left < p.chunkSize || p.chunkSize == 0) {
			req.Limit = int32(left)
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		res, err := get(ctx, req)
		cancel()
		if err != nil {
			return nil, rpcError(err)
		}
		all.Volumes = append(all.Volumes, res.Volumes...)
		all.Nodes = append(all.Nodes, res.Nodes...)
		all.Workloads = append(all.Workloads, res.Workloads...)
		all.Continue = res.Continue
		switch {
		case res.Continue == "" || req.Name != "":
			return all, nil
		case p.limit > 0 && listed(all) >= p.limit:
			return all, nil
		case res.Continue == req.Continue:
			return nil, fmt.Errorf("the server sent the same continue token twice: stopping (%d objects listed)", listed(all))
		}
		req.Continue = res.Continue
	}
}

func listed(res *messages.GetResponse) int {
	return len(res.Volumes) + len(res.Nodes) + len(res.Workloads)
}
