package distributed

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/tether/tether/messages"
)

// MemberAPI connects to the API of member i (which must be running), as
// API does to the first one up: a test asks each member in turn.
func (f *Fleet) MemberAPI(ctx context.Context, i int) (messages.TetherClient, context.Context, func() error, error) {
	f.mu.Lock()
	var addr string
	if i >= 0 && i < len(f.members) && f.members[i].proc != nil && !f.members[i].proc.exited() {
		addr = f.members[i].api
	}
	f.mu.Unlock()
	if addr == "" {
		return nil, nil, nil, fmt.Errorf("fleet: controller %d is not running", i)
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+f.cfg.Token)
	return messages.NewTetherClient(conn), ctx, conn.Close, nil
}
