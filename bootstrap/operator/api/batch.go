package api

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/messages"
)

// ChunkBytes bounds one chunk of an ApplyStream that SendBatch makes, well
// under the server's per-message bound (MaxRequestBytes).
const ChunkBytes = 256 << 10

// MaxDocumentBytes bounds one document, encoded: the largest that one
// message of the API (MaxRequestBytes) carries alone, with room for the
// fields around it.
const MaxDocumentBytes = MaxRequestBytes - 64

// Batch holds the documents of one apply encoded, in the chunks SendBatch
// will send: a client holds them in about the size of their text, where
// decoded messages take several times more. Its zero value is empty.
type Batch struct {
	chunks [][]byte // field 1 of ApplyRequest and ApplyChunk, repeated: at most ChunkBytes each unless one document is larger
	first  []int    // the index of each chunk's first document
	n      int
	size   int // of all chunks together: the encoded ApplyRequest
}

// Len returns the number of documents added.
func (b *Batch) Len() int { return b.n }

// Size returns the encoded size of the documents added: that of one
// ApplyRequest holding them.
func (b *Batch) Size() int { return b.size }

// Add appends d, or refuses it, changing nothing, if it is larger than
// MaxDocumentBytes encoded (no message of the API could carry it).
func (b *Batch) Add(d *messages.Document) error {
	size := proto.Size(d)
	if size > MaxDocumentBytes {
		return fmt.Errorf("the document is %d bytes encoded, more than the %d one document may have", size, MaxDocumentBytes)
	}
	m := protowire.SizeTag(1) + protowire.SizeBytes(size)
	last := len(b.chunks) - 1
	if last < 0 || (len(b.chunks[last])+m > ChunkBytes && len(b.chunks[last]) > 0) {
		b.chunks = append(b.chunks, make([]byte, 0, min(ChunkBytes, max(m, 4096))))
		b.first = append(b.first, b.n)
		last++
	}
	ch := protowire.AppendTag(b.chunks[last], 1, protowire.BytesType)
	ch = protowire.AppendVarint(ch, uint64(size))
	ch, err := proto.MarshalOptions{}.MarshalAppend(ch, d)
	if err != nil {
		return err
	}
	b.chunks[last] = ch
	b.n++
	b.size += m
	return nil
}

// Document returns the i-th document added (from 0), decoding its chunk.
func (b *Batch) Document(i int) (*messages.Document, error) {
	if i < 0 || i >= b.n {
		return nil, fmt.Errorf("document %d of %d", i, b.n)
	}
	k := len(b.first) - 1
	for b.first[k] > i {
		k--
	}
	var ch messages.ApplyChunk
	if err := proto.Unmarshal(b.chunks[k], &ch); err != nil {
		return nil, err
	}
	return ch.Documents[i-b.first[k]], nil
}

// Send applies docs through c, all or nothing, as SendBatch does; a
// document no message could carry is refused, naming it as the server
// does ("document N", from 1), before anything is sent.
func Send(ctx context.Context, c messages.TetherClient, docs []*messages.Document) (*messages.ApplyResponse, error) {
	var b Batch
	for i, d := range docs {
		if err := b.Add(d); err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	return SendBatch(ctx, c, &b)
}

// SendBatch applies b through c, all or nothing: as one Apply if it fits
// in one request (which every tether server takes), else as one
// ApplyStream of its chunks, each decoded only as it is sent, the last
// marked with the total.
func SendBatch(ctx context.Context, c messages.TetherClient, b *Batch) (*messages.ApplyResponse, error) {
	if b.size <= MaxRequestBytes {
		req := &messages.ApplyRequest{}
		merge := proto.UnmarshalOptions{Merge: true}
		for _, ch := range b.chunks {
			if err := merge.Unmarshal(ch, req); err != nil {
				return nil, err
			}
		}
		return c.Apply(ctx, req)
	}
	st, err := c.ApplyStream(ctx)
	if err != nil {
		return nil, err
	}
	for k, enc := range b.chunks {
		ch := &messages.ApplyChunk{}
		if err := proto.Unmarshal(enc, ch); err != nil {
			return nil, err
		}
		if k == len(b.chunks)-1 {
			ch.Last, ch.Total = true, int64(b.n)
		}
		// io.EOF: the server ended the call early; CloseAndRecv says why.
		if err := st.Send(ch); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return st.CloseAndRecv()
}
