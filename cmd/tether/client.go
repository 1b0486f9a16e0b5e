package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/bootstrap/process"
	"github.com/tether/tether/messages"
)

// clientFlags are shared by the commands that talk to a running tether.
type clientFlags struct {
	dataDir string
	addr    string
	token   string
	timeout time.Duration
	tls     clientTLS
}

func (f *clientFlags) register(fs *pflag.FlagSet) { f.registerTimeout(fs, 30*time.Second) }

// registerTimeout is register with another default --timeout.
func (f *clientFlags) registerTimeout(fs *pflag.FlagSet, timeout time.Duration) {
	fs.StringVar(&f.dataDir, "data-dir", defaultDataDir(), "tether's data directory (where tether up keeps its state, token and address)")
	fs.StringVar(&f.addr, "addr", "", "API address (default: read from <data-dir>/api-addr)")
	fs.StringVar(&f.token, "token", "", "API bearer token (default: read from <data-dir>/api-token)")
	fs.DurationVar(&f.timeout, "timeout", timeout, "how long a call may take (at least 100ms)")
	f.tls.register(fs)
}

func defaultDataDir() string {
	if d := os.Getenv("TETHER_DATA_DIR"); d != "" {
		return d
	}
	return "tether-data"
}

// envFallback sets every flag the user did not give from TETHER_<NAME>
// (upper case, dashes as underscores), if set.
func envFallback(cmd *cobra.Command) error {
	var errs []error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		env := "TETHER_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := os.LookupEnv(env); ok && !f.Changed {
			if err := f.Value.Set(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", env, v, err))
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		return usageError{err}
	}
	return nil
}

// connect dials the API with the token attached to every call.
func (f *clientFlags) connect() (messages.TetherClient, func(), error) {
	addr, token := f.addr, f.token
	if addr == "" {
		b, err := os.ReadFile(filepath.Join(f.dataDir, process.AddrFile))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, fmt.Errorf("no tether running with data directory %s (start one with: tether up --data-dir %s), or pass --addr", f.dataDir, f.dataDir)
		}
		if err != nil {
			return nil, nil, err
		}
		addr = strings.TrimSpace(string(b))
	}
	if token == "" {
		b, err := os.ReadFile(filepath.Join(f.dataDir, api.TokenFile))
		if err != nil {
			return nil, nil, fmt.Errorf("reading the API token: %w (pass --token)", err)
		}
		token = strings.TrimSpace(string(b))
	}
	target, creds, useTLS, err := f.transport(addr, f.addr == "")
	if err != nil {
		return nil, nil, err
	}
	conn, err := grpc.NewClient(target, creds,
		grpc.WithChainUnaryInterceptor(explainTLS(useTLS, f.tls.cert != "")),
		grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(explainTLSStream(useTLS, f.tls.cert != "")),
		grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token), desc, cc, method, opts...)
		}))
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", addr, err)
	}
	return messages.NewTetherClient(conn), func() { conn.Close() }, nil
}

// open connects and bounds the call by --timeout; done releases both.
func (f *clientFlags) open() (messages.TetherClient, context.Context, func(), error) {
	c, closeConn, err := f.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	return c, ctx, func() { cancel(); closeConn() }, nil
}

// explainTLSStream is explainTLS for streams: it explains the error that
// opens or ends one.
func explainTLSStream(useTLS, clientCert bool) grpc.StreamClientInterceptor {
	explain := func(err error) error {
		if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
			if hint := tlsHint(s.Message(), useTLS, clientCert); hint != "" {
				return status.Error(codes.Unavailable, s.Message()+"; check: "+hint)
			}
		}
		return err
	}
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		cs, err := streamer(ctx, desc, cc, method, opts...)
		if err != nil {
			return nil, explain(err)
		}
		return explainedStream{cs, explain}, nil
	}
}

// explainedStream passes the errors of its RecvMsg through explain (a
// client stream's outcome comes from RecvMsg: CloseAndRecv calls it).
type explainedStream struct {
	grpc.ClientStream
	explain func(error) error
}

func (s explainedStream) RecvMsg(m any) error { return s.explain(s.ClientStream.RecvMsg(m)) }
