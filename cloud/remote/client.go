package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// DeadlineMargin is how much earlier than its caller's deadline a sent
// call's deadline is (see
// docs/distributed.md#the-provider-contract-over-the-wire): an upper bound
// on the transit time of a request, generous for a data centre, so that
// the provider never carries out a call after the caller's deadline.
const DeadlineMargin = 20 * time.Millisecond

// DialTimeout bounds Dial's wait for the server's batch size.
const DialTimeout = 10 * time.Second

// Client is a cloud.Provider that calls a Server and, if the Server is a
// ServeSim, the sim cloud's admin side (admin.go, watch.go), with the
// signatures of *sim.Cloud's methods. It is safe for concurrent use.
type Client struct {
	// AdminTimeout bounds each admin call (those methods take no
	// context), including the wait for the connection to be ready;
	// Dial sets DefaultAdminTimeout. Set it before sharing the Client.
	AdminTimeout time.Duration

	conn  *grpc.ClientConn
	rpc   messages.CloudClient
	admin messages.SimAdminClient
	batch int // fetched once by Dial
}

var _ cloud.Provider = (*Client)(nil)

// Dial connects to the Server at addr and asks its batch size, waiting up
// to DialTimeout for the server to come up. opts must include transport
// credentials (grpc.WithTransportCredentials).
func Dial(addr string, opts ...grpc.DialOption) (*Client, error) {
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("remote: dial %s: %w", addr, err)
	}
	c := &Client{AdminTimeout: DefaultAdminTimeout, conn: conn, rpc: messages.NewCloudClient(conn), admin: messages.NewSimAdminClient(conn)}
	ctx, cancel := context.WithTimeout(context.Background(), DialTimeout)
	defer cancel()
	r, err := c.rpc.BatchSize(ctx, &messages.BatchSizeRequest{}, grpc.WaitForReady(true))
	if err != nil {
		_ = conn.Close() // the batch size error is the one to report
		return nil, fmt.Errorf("remote: dial %s: asking the batch size: %w", addr, err)
	}
	if r.GetBatchSize() < 1 {
		_ = conn.Close()
		return nil, fmt.Errorf("remote: dial %s: batch size %d, want at least 1", addr, r.GetBatchSize())
	}
	c.batch = int(r.GetBatchSize())
	return c, nil
}

// Close closes the connection; calls in flight fail with an unknown
// outcome.
func (c *Client) Close() error { return c.conn.Close() }

// BatchSize implements cloud.Provider: the server's, asked once by Dial.
func (c *Client) BatchSize() int { return c.batch }

// call runs one RPC of method under ctx: nothing is sent if ctx is done;
// otherwise send runs with ctx's deadline shortened by DeadlineMargin, and
// its error is mapped by fromStatus.
func call[R any](ctx context.Context, method string, send func(context.Context) (R, error)) (R, error) {
	var zero R
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	sctx := ctx
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		sctx, cancel = context.WithDeadline(ctx, d.Add(-DeadlineMargin))
		defer cancel()
	}
	r, err := send(sctx)
	if err != nil {
		return zero, fromStatus(ctx, method, err)
	}
	return r, nil
}

// InstanceID implements cloud.Provider.
func (c *Client) InstanceID(ctx context.Context, node cloud.NodeName) (cloud.InstanceID, error) {
	r, err := call(ctx, "instance_id", func(ctx context.Context) (*messages.InstanceIDResponse, error) {
		return c.rpc.InstanceID(ctx, &messages.InstanceIDRequest{Node: string(node)})
	})
	if err != nil {
		return "", err
	}
	return cloud.InstanceID(r.GetInstanceId()), nil
}

var _ cloud.InstanceResolver = (*Client)(nil)

// InstanceIDs implements cloud.InstanceResolver. A cloud service whose
// provider has none, or from before the call, answers Unimplemented:
// errors.ErrUnsupported then, and the caller resolves node by node.
func (c *Client) InstanceIDs(ctx context.Context, nodes []cloud.NodeName) (map[cloud.NodeName]cloud.InstanceID, error) {
	var raw error
	r, err := call(ctx, "instance_ids", func(ctx context.Context) (*messages.InstanceIDsResponse, error) {
		r, err := c.rpc.InstanceIDs(ctx, &messages.InstanceIDsRequest{Nodes: strs(nodes)})
		raw = err
		return r, err
	})
	if err != nil {
		return nil, unsupported(raw, err, "InstanceIDs (its provider resolves node by node, or it is older)")
	}
	out := make(map[cloud.NodeName]cloud.InstanceID, len(r.GetInstances()))
	for n, id := range r.GetInstances() {
		out[cloud.NodeName(n)] = cloud.InstanceID(id)
	}
	return out, nil
}

// Attach implements cloud.Provider.
func (c *Client) Attach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) (string, error) {
	r, err := call(ctx, "attach", func(ctx context.Context) (*messages.CloudAttachResponse, error) {
		return c.rpc.Attach(ctx, &messages.CloudAttachRequest{VolumeId: string(vol), InstanceId: string(inst)})
	})
	if err != nil {
		return "", err
	}
	return r.GetDevicePath(), nil
}

// Detach implements cloud.Provider.
func (c *Client) Detach(ctx context.Context, vol cloud.VolumeID, inst cloud.InstanceID) error {
	_, err := call(ctx, "detach", func(ctx context.Context) (*messages.CloudDetachResponse, error) {
		return c.rpc.Detach(ctx, &messages.CloudDetachRequest{VolumeId: string(vol), InstanceId: string(inst)})
	})
	return err
}

// VolumesAreAttached implements cloud.Provider.
func (c *Client) VolumesAreAttached(ctx context.Context, query map[cloud.InstanceID][]cloud.VolumeID) (map[cloud.InstanceID]map[cloud.VolumeID]bool, error) {
	req := &messages.VolumesAreAttachedRequest{Query: make(map[string]*messages.VolumeIDs, len(query))}
	for inst, vols := range query {
		ids := make([]string, len(vols))
		for i, v := range vols {
			ids[i] = string(v)
		}
		req.Query[string(inst)] = &messages.VolumeIDs{VolumeIds: ids}
	}
	r, err := call(ctx, "volumes_are_attached", func(ctx context.Context) (*messages.VolumesAreAttachedResponse, error) {
		return c.rpc.VolumesAreAttached(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]bool, len(r.GetInstances()))
	for inst, flags := range r.GetInstances() {
		m := make(map[cloud.VolumeID]bool, len(flags.GetAttached()))
		for v, ok := range flags.GetAttached() {
			m[cloud.VolumeID(v)] = ok
		}
		out[cloud.InstanceID(inst)] = m
	}
	return out, nil
}

// InstanceVolumes implements cloud.Provider.
func (c *Client) InstanceVolumes(ctx context.Context, insts []cloud.InstanceID) (map[cloud.InstanceID]map[cloud.VolumeID]string, error) {
	req := &messages.InstanceVolumesRequest{InstanceIds: make([]string, len(insts))}
	for i, id := range insts {
		req.InstanceIds[i] = string(id)
	}
	r, err := call(ctx, "instance_volumes", func(ctx context.Context) (*messages.InstanceVolumesResponse, error) {
		return c.rpc.InstanceVolumes(ctx, req)
	})
	if err != nil {
		return nil, err
	}
	out := make(map[cloud.InstanceID]map[cloud.VolumeID]string, len(r.GetInstances()))
	for inst, devs := range r.GetInstances() {
		m := make(map[cloud.VolumeID]string, len(devs.GetDevices()))
		for v, dev := range devs.GetDevices() {
			m[cloud.VolumeID(v)] = dev
		}
		out[cloud.InstanceID(inst)] = m
	}
	return out, nil
}

// unsupported wraps err, the failure of a call whose raw gRPC error was
// raw, with errors.ErrUnsupported when the server does not serve the call
// (Unimplemented): the caller falls back to what it did before the call
// existed.
func unsupported(raw, err error, what string) error {
	if status.Code(raw) == codes.Unimplemented {
		return fmt.Errorf("%w: the cloud service does not serve %s: %w", errors.ErrUnsupported, what, err)
	}
	return err
}
