package bench

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process"
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
func startClient(e *process.Embedded, dir string) (*client, error) {
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

// apply sends docs as one all-or-nothing apply, as tether apply does.
func (c *client) apply(ctx context.Context, docs []*messages.Document) error {
	if _, err := api.Send(c.ctx(ctx), c.api, docs); err != nil {
		return fmt.Errorf("apply of %d documents: %w", len(docs), err)
	}
	return nil
}

func volumeDoc(name string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: name, AccessMode: "ReadWriteOnce"}}}
}

func workloadDoc(name, node, vol string) *messages.Document {
	return &messages.Document{Doc: &messages.Document_Workload{Workload: &messages.WorkloadDoc{Name: name, Node: node,
		Volumes: []*messages.WorkloadVolumeDoc{{Name: vol}}}}}
}
