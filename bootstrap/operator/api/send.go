package api

import (
	"context"
	"errors"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/messages"
)

// ChunkBytes bounds one chunk of an ApplyStream that Send makes, well under
// the server's per-message bound (MaxRequestBytes).
const ChunkBytes = 256 << 10

// Send applies docs through c, all or nothing: as one Apply if they fit in
// one request (which every tether server takes), else as one ApplyStream
// in chunks of at most ChunkBytes.
func Send(ctx context.Context, c messages.TetherClient, docs []*messages.Document) (*messages.ApplyResponse, error) {
	req := &messages.ApplyRequest{Documents: docs}
	if proto.Size(req) <= MaxRequestBytes {
		return c.Apply(ctx, req)
	}
	st, err := c.ApplyStream(ctx)
	if err != nil {
		return nil, err
	}
	for _, ch := range Chunks(docs, ChunkBytes) {
		// io.EOF: the server ended the call early; CloseAndRecv says why.
		if err := st.Send(ch); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return st.CloseAndRecv()
}

// Chunks splits docs into chunks of at most size encoded bytes (a
// document larger than size alone in its chunk), the last one marked with
// the total.
func Chunks(docs []*messages.Document, size int) []*messages.ApplyChunk {
	var out []*messages.ApplyChunk
	cur, n := &messages.ApplyChunk{}, 0
	for _, d := range docs {
		m := 1 + protowire.SizeBytes(proto.Size(d))
		if n+m > size && len(cur.Documents) > 0 {
			out, cur, n = append(out, cur), &messages.ApplyChunk{}, 0
		}
		cur.Documents, n = append(cur.Documents, d), n+m
	}
	cur.Last, cur.Total = true, int64(len(docs))
	return append(out, cur)
}
