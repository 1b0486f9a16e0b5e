package bench

import (
	"context"
	"errors"
	"fmt"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/bootstrap"
	"github.com/tether/tether/bootstrap/api"
	"github.com/tether/tether/messages"
)

// client is the bench's API client: the bench changes the desired state
// through the API server, as tether apply does.
type client struct {
	srv   *api.Server
	conn  *grpc.ClientConn
	api   messages.TetherClient
	token string
}

// startClient serves the API of e on a loopback port and connects to it.
func startClient(e *bootstrap.Embedded, dir string) (*client, error) {
	token, err := api.LoadOrCreateToken(dir)
	if err != nil {
		return nil, err
	}
	srv, err := api.Serve("127.0.0.1:0", token, e.Controller, e.Cloud, false)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, errors.Join(err, srv.Stop())
	}
	return &client{srv: srv, conn: conn, api: messages.NewTetherClient(conn), token: token}, nil
}

func (c *client) close() error {
	return errors.Join(c.conn.Close(), c.srv.Stop())
}

func (c *client) ctx(ctx context.Context) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
}

// apply sends docs as one all-or-nothing apply, streamed in chunks.
func (c *client) apply(ctx context.Context, docs []*messages.Document) error {
	st, err := c.api.ApplyStream(c.ctx(ctx))
	if err != nil {
		return err
	}
	for _, ch := range chunks(docs, 256<<10) {
		if err := st.Send(ch); errors.Is(err, io.EOF) {
			break // the server ended the call: CloseAndRecv says why
		} else if err != nil {
			return err
		}
	}
	if _, err := st.CloseAndRecv(); err != nil {
		return fmt.Errorf("apply of %d documents: %w", len(docs), err)
	}
	return nil
}

// chunks splits docs into chunks of at most size encoded bytes, the last
// one marked with the total.
func chunks(docs []*messages.Document, size int) []*messages.ApplyChunk {
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

func volumeDoc(name string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: name, AccessMode: "ReadWriteOnce"}}}
}

func workloadDoc(name, node, vol string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: name, Node: node,
		Volumes: []*messages.WorkloadVolumeDoc{{Name: vol}}}}}
}
