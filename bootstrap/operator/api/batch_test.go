package api

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/messages"
)

// A Batch keeps every document once, in order, in chunks within
// ChunkBytes, its size that of one ApplyRequest of them; it refuses a
// document no message could carry, and stays as it was.
func TestBatch(t *testing.T) {
	var b Batch
	var docs []*messages.Document
	for i := range 20000 {
		d := &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: fmt.Sprintf("node-%06d", i)}}}
		if err := b.Add(d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if got, want := b.Size(), proto.Size(&messages.ApplyRequest{Documents: docs}); got != want || b.Len() != len(docs) {
		t.Fatalf("size %d, len %d; want %d, %d", got, b.Len(), want, len(docs))
	}
	for k, ch := range b.chunks {
		if len(ch) > ChunkBytes {
			t.Fatalf("chunk %d: %d bytes", k, len(ch))
		}
	}
	for _, i := range []int{0, 1, 9999, 19999} {
		d, err := b.Document(i)
		if err != nil || !proto.Equal(d, docs[i]) {
			t.Fatalf("document %d: %v, %v; want %v", i, d, err, docs[i])
		}
	}
	big := &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: strings.Repeat("x", MaxDocumentBytes)}}}
	if err := b.Add(big); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than the %d one document may have", MaxDocumentBytes)) {
		t.Fatalf("oversized document: %v", err)
	}
	if b.Len() != len(docs) {
		t.Fatalf("a refused document changed the batch: %d documents", b.Len())
	}
}

// chunkClient records the chunks of the ApplyStream it is sent.
type chunkClient struct {
	messages.TetherClient
	grpc.ClientStreamingClient[messages.ApplyChunk, messages.ApplyResponse]
	chunks []*messages.ApplyChunk
}

func (c *chunkClient) ApplyStream(context.Context, ...grpc.CallOption) (grpc.ClientStreamingClient[messages.ApplyChunk, messages.ApplyResponse], error) {
	return c, nil
}

func (c *chunkClient) Send(ch *messages.ApplyChunk) error {
	c.chunks = append(c.chunks, ch)
	return nil
}

func (c *chunkClient) CloseAndRecv() (*messages.ApplyResponse, error) {
	return &messages.ApplyResponse{}, nil
}

// An apply larger than one request is sent (Send and SendBatch alike) as
// chunks within ChunkBytes that carry every document once, in order, the
// last alone marked, with the total.
func TestSendChunks(t *testing.T) {
	var docs []*messages.Document
	for i := range 40000 {
		docs = append(docs, &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: fmt.Sprintf("node-%06d-%s", i, strings.Repeat("x", 20))}}})
	}
	if proto.Size(&messages.ApplyRequest{Documents: docs}) <= MaxRequestBytes {
		t.Fatal("the documents fit in one request")
	}
	c := &chunkClient{}
	if _, err := Send(context.Background(), c, docs); err != nil {
		t.Fatal(err)
	}
	i := 0
	for k, ch := range c.chunks {
		if size := proto.Size(ch); size > ChunkBytes+20 {
			t.Fatalf("chunk %d is %d bytes", k, size)
		}
		if ch.Last != (k == len(c.chunks)-1) {
			t.Fatalf("chunk %d of %d: last %v", k, len(c.chunks), ch.Last)
		}
		for _, d := range ch.Documents {
			if !proto.Equal(d, docs[i]) {
				t.Fatalf("chunk %d: document %d out of order", k, i)
			}
			i++
		}
	}
	last := c.chunks[len(c.chunks)-1]
	if i != len(docs) || last.Total != int64(len(docs)) || len(c.chunks) < 5 {
		t.Fatalf("%d chunks carry %d documents, total %d; want %d", len(c.chunks), i, last.Total, len(docs))
	}
	big := &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: strings.Repeat("x", MaxDocumentBytes)}}}
	c = &chunkClient{}
	if _, err := Send(context.Background(), c, []*messages.Document{docs[0], big}); err == nil || !strings.HasPrefix(err.Error(), "document 2: ") || len(c.chunks) != 0 {
		t.Fatalf("oversized document 2: %v, %d chunks sent", err, len(c.chunks))
	}
}
