package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// chunked splits docs into chunks of per documents, the last marked.
func chunked(docs []*messages.Document, per int) []*messages.ApplyChunk {
	var out []*messages.ApplyChunk
	for len(docs) > per {
		out = append(out, &messages.ApplyChunk{Documents: docs[:per]})
		docs = docs[per:]
	}
	return append(out, &messages.ApplyChunk{Documents: docs, Last: true})
}

// withTotal sets the last chunk's total to the documents of all.
func withTotal(chs []*messages.ApplyChunk) []*messages.ApplyChunk {
	n := 0
	for _, c := range chs {
		n += len(c.Documents)
	}
	chs[len(chs)-1].Total = int64(n)
	return chs
}

// streamApply sends chunks on one ApplyStream and closes it.
func streamApply(ctx context.Context, c messages.TetherClient, chs []*messages.ApplyChunk) (*messages.ApplyResponse, error) {
	st, err := c.ApplyStream(ctx)
	if err != nil {
		return nil, err
	}
	for _, ch := range chs {
		if err := st.Send(ch); err != nil {
			break // the server ended the call: CloseAndRecv says why
		}
	}
	return st.CloseAndRecv()
}

// bigApply is nodes, vols volumes and a workload per volume, with long
// names: about 180 bytes per volume and workload.
func bigApply(nodes, vols int) []*messages.Document {
	var docs []*messages.Document
	for i := range nodes {
		docs = append(docs, node(fmt.Sprintf("node-%04d", i)))
	}
	pad := strings.Repeat("x", 100)
	for i := range vols {
		v := fmt.Sprintf("vol-%s-%06d", pad, i)
		docs = append(docs, vol(v, ""), wl(fmt.Sprintf("wl-%s-%06d", pad, i), fmt.Sprintf("node-%04d", i%nodes), v))
	}
	return docs
}

// listed returns the names get lists of kind, following every page.
func (f *fixture) listed(kind string) map[string]bool {
	f.t.Helper()
	names := map[string]bool{}
	req := &messages.GetRequest{Kind: kind}
	for {
		res, err := f.client().Get(f.ctx(f.token), req)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, v := range res.Volumes {
			names[v.Spec.Name] = true
		}
		for _, n := range res.Nodes {
			names[n.Spec.Name] = true
		}
		for _, w := range res.Workloads {
			names[w.Spec.Name] = true
		}
		if res.Continue == "" {
			return names
		}
		req.Continue = res.Continue
	}
}

// An apply of 1.3 MB, past one request's 1 MiB, streamed in chunks: every
// object is there afterwards, listed by get; the response counts every
// object and lists as many as fit.
func TestApplyStreamPastOneRequest(t *testing.T) {
	f := newFixture(t)
	docs := bigApply(20, 3500)
	if size := proto.Size(&messages.ApplyRequest{Documents: docs}); size <= MaxRequestBytes {
		t.Fatalf("the apply is %d bytes: want more than one request takes", size)
	}
	// The controller takes seconds for this under the race detector.
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+f.token), 2*time.Minute)
	defer cancel()
	res, err := streamApply(ctx, f.client(), withTotal(chunked(docs, 1000)))
	if err != nil {
		t.Fatal(err)
	}
	if got := int64(len(res.Applied)) + res.Omitted; got != int64(len(docs)) {
		t.Errorf("response lists %d lines and omits %d, want %d in all", len(res.Applied), res.Omitted, len(docs))
	}
	var counts []string
	for _, c := range res.Counts {
		counts = append(counts, fmt.Sprintf("%s %s %d", c.Kind, c.Verb, c.Count))
	}
	if got, want := strings.Join(counts, ", "), "volume created 3500, node created 20, workload created 3500"; got != want {
		t.Errorf("counts %q, want %q", got, want)
	}
	want := map[string][]string{}
	for _, d := range docs {
		switch x := d.Doc.(type) {
		case *messages.Document_Volume:
			want["volume"] = append(want["volume"], x.Volume.Name)
		case *messages.Document_Node:
			want["node"] = append(want["node"], x.Node.Name)
		case *messages.Document_Workload:
			want["workload"] = append(want["workload"], x.Workload.Name)
		}
	}
	for kind, names := range want {
		listed := f.listed(kind)
		for _, name := range names {
			if !listed[name] {
				t.Fatalf("%s/%s applied but get does not list it (%d listed)", kind, name, len(listed))
			}
		}
	}
	if _, _, ok := f.cloud.Volume(cloud.VolumeID(fmt.Sprintf("vol-%s-%06d", strings.Repeat("x", 100), 3499))); !ok {
		t.Error("the last volume has no disk")
	}
}

// serveWith starts a second server on the fixture's controller with svc's
// bounds; stopping it waits for its calls to return.
func (f *fixture) serveWith(maxDocs, maxBytes int) (*Server, messages.TetherClient) {
	f.t.Helper()
	srv, err := serve("127.0.0.1:0", f.token, &service{ctl: f.ctl, nodes: f.cloud, maxDocs: maxDocs, maxBytes: maxBytes}, false)
	if err != nil {
		f.t.Fatal(err)
	}
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() {
		conn.Close()
		if err := srv.Stop(); err != nil {
			f.t.Error(err)
		}
	})
	return srv, messages.NewTetherClient(conn)
}

// nothingApplied fails if the store or the cloud holds anything of docs
// (bigApply's: nodes n1 and n2 of the fixture are not among them).
func (f *fixture) nothingApplied(docs []*messages.Document) {
	f.t.Helper()
	f.nothingStored()
	for _, d := range docs {
		if v := d.GetVolume(); v != nil {
			f.wantNoDisk(cloud.VolumeID(v.Name))
		}
		if n := d.GetNode(); n != nil {
			if _, ok, _ := f.store.Node(cloud.NodeName(n.Name)); ok {
				f.t.Fatalf("node %s stored", n.Name)
			}
			f.wantNoInstance(cloud.NodeName(n.Name))
		}
	}
}

// A stream cancelled by its client applies nothing, whether the server had
// its last chunk or not. The server is stopped before the store is read:
// Stop returns once the stream's handler has.
func TestApplyStreamCancelledAppliesNothing(t *testing.T) {
	docs := bigApply(5, 2000)
	for _, tt := range []struct {
		name string
		sent int // chunks sent before the cancel, of 10
	}{
		{"midway", 5},
		{"after the last chunk, before the close", 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			srv, c := f.serveWith(0, 0)
			ctx, cancel := context.WithCancel(f.ctx(f.token))
			st, err := c.ApplyStream(ctx)
			if err != nil {
				t.Fatal(err)
			}
			chs := withTotal(chunked(docs, 410))
			for _, ch := range chs[:tt.sent] {
				if err := st.Send(ch); err != nil {
					t.Fatal(err)
				}
			}
			cancel()
			if _, err := st.CloseAndRecv(); err == nil {
				t.Fatal("a cancelled stream succeeded")
			}
			if err := srv.Stop(); err != nil {
				t.Fatal(err)
			}
			f.nothingApplied(docs)
		})
	}
}

// A stream past a bound, or not ended as the protocol says, is refused
// with an error saying why, and applies nothing.
func TestApplyStreamRefused(t *testing.T) {
	docs := bigApply(2, 10) // 22 documents, 3,640 bytes; the first 20 3,279
	var tiny []*messages.Document
	for i := range 21 {
		tiny = append(tiny, node(fmt.Sprintf("tiny-%02d", i)))
	}
	f := newFixture(t)
	_, c := f.serveWith(20, 3000)
	_, roomy := f.serveWith(0, 0)
	withLast := func(chs []*messages.ApplyChunk, total int64) []*messages.ApplyChunk {
		chs[len(chs)-1].Total = total
		return chs
	}
	for _, tt := range []struct {
		name   string
		client messages.TetherClient
		chunks []*messages.ApplyChunk
		code   codes.Code
		want   string
	}{
		{"too many documents", c, withTotal(chunked(tiny, 7)), codes.ResourceExhausted, "more than 20 documents, the bound of one apply"},
		{"too many bytes", c, withTotal(chunked(docs[:20], 4)), codes.ResourceExhausted, "more than 3000 bytes of documents, the bound of one apply"},
		{"closed before the last chunk", roomy, chunked(docs, 10)[:2], codes.InvalidArgument, "closed after 20 documents without its last chunk"},
		{"total mismatch", roomy, withLast(chunked(docs, 10), 21), codes.InvalidArgument, "the last chunk says 21 documents, 22 were received"},
		{"chunk after the last", roomy, append(withTotal(chunked(docs[:10], 10)), &messages.ApplyChunk{Documents: docs[10:]}), codes.InvalidArgument, "a chunk after the last"},
		{"no documents", roomy, []*messages.ApplyChunk{{Last: true}}, codes.InvalidArgument, "no documents"},
		{"refused by validation", roomy, withTotal(chunked(append(slices.Clone(docs), wl("w-x", "nowhere")), 10)), codes.InvalidArgument, `document 23: controller: invalid request: workload "w-x" names unknown node "nowhere"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := streamApply(f.ctx(f.token), tt.client, tt.chunks)
			wantCode(t, err, tt.code, tt.want)
			f.nothingApplied(append(tiny, docs...))
		})
	}
	t.Run("no token", func(t *testing.T) {
		ctx := metadata.AppendToOutgoingContext(f.ctx(""), "authorization", "Bearer wrong")
		_, err := streamApply(ctx, roomy, withTotal(chunked(docs, 10)))
		wantCode(t, err, codes.Unauthenticated, "wrong API token")
		f.nothingApplied(docs)
	})
}

func TestCountApplied(t *testing.T) {
	lines := []string{"workload/w created", "volume/a created", "volume/b unchanged", "node/n configured", "volume/c created", "thing/x frobbed"}
	var got []string
	for _, c := range countApplied(lines) {
		got = append(got, fmt.Sprintf("%s %s %d", c.Kind, c.Verb, c.Count))
	}
	want := "volume created 2, volume unchanged 1, node configured 1, workload created 1, thing frobbed 1"
	if strings.Join(got, ", ") != want {
		t.Fatalf("counts %q, want %q", strings.Join(got, ", "), want)
	}
	kept, omitted := withinBudget(lines, 40)
	if len(kept) != 2 || omitted != 4 {
		t.Fatalf("within 40 bytes: kept %v, omitted %d; want 2 kept (20 and 18 bytes with tag and length), 4 omitted", kept, omitted)
	}
}
