package api

import (
	"fmt"
	"strings"
	"testing"

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
