package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/tether/tether/actors/store/etcdserver"
)

// ErrTooBig is matched by Etcd.Apply's refusal of a batch that would not
// fit in one etcd transaction (EtcdConfig.MaxTxnOps, MaxRequestBytes); a
// refused batch changes nothing. Split it.
var ErrTooBig = errors.New("store: batch too big for one etcd transaction")

// Defaults of EtcdConfig.
const (
	DefaultEtcdPrefix  = "/tether/"
	DefaultEtcdTimeout = 5 * time.Second
)

// EtcdConfig says where the store lives in etcd and how to reach it.
type EtcdConfig struct {
	// Endpoints are etcd's client URLs.
	Endpoints []string
	// Prefix is put before every key of the store; "" is
	// DefaultEtcdPrefix. End it with a "/": stores whose prefixes are not
	// prefixes of each other share nothing.
	Prefix string
	// DialTimeout bounds OpenEtcd's wait for etcd to answer; Timeout
	// bounds every later call, its retries included (Apply's grows with
	// its batch, see perOp). 0: DefaultEtcdTimeout.
	DialTimeout, Timeout time.Duration
	// TLS, if set, is the client's TLS configuration (mutual TLS: set its
	// Certificates); the endpoints are then https URLs.
	TLS *tls.Config
	// MaxTxnOps and MaxRequestBytes are the etcd server's --max-txn-ops
	// and --max-request-bytes; 0 is what etcdserver starts etcd with
	// (etcdserver.MaxTxnOps, etcdserver.MaxRequestBytes). An etcd run
	// with its own defaults needs 128 and 1572864 here.
	MaxTxnOps, MaxRequestBytes int
	// Cache serves reads from a copy of the store in memory, fed by a
	// watch (etcd_cache.go): still linearizable, but a read costs one
	// small request shared by all reads in flight instead of its own.
	Cache bool
	// Log, if set, is told what the store does on its own (its cache's
	// watch ending and starting over).
	Log func(format string, args ...any)
}

func (c EtcdConfig) withDefaults() EtcdConfig {
	if c.Prefix == "" {
		c.Prefix = DefaultEtcdPrefix
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultEtcdTimeout
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultEtcdTimeout
	}
	if c.MaxTxnOps <= 0 {
		c.MaxTxnOps = etcdserver.MaxTxnOps
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = etcdserver.MaxRequestBytes
	}
	return c
}

// Etcd is a durable Store in etcd that several processes share. Every
// write is one etcd transaction whose compare guards what it read
// (optimistic concurrency: a conflicting write makes it read again and
// retry, a bounded number of times), so writes of several processes
// interleave whole and a failed write changes nothing. Indexes
// (workloads by node and by volume, statuses by volume) are keys written
// in the same transactions, so lookups are range scans of a few keys.
// Every call is bounded by EtcdConfig.Timeout; a write whose outcome is
// unknown (etcd went away before answering) returns a context or
// connection error and may have landed, as a cloud call may have.
//
// etcd keeps every revision until it is compacted: run it with
// --auto-compaction-mode and --auto-compaction-retention (etcdserver
// does).
type Etcd struct {
	c   *clientv3.Client
	cfg EtcdConfig
	k   etcdKeys

	mu         sync.Mutex // guards the injected failures
	failApply  int
	failStatus int

	requests requestCounter
	cache    *etcdCache // nil unless EtcdConfig.Cache
	group    committer  // shares transactions among fenced writes

	groups, grouped atomic.Uint64 // shared transactions committed, and their writes
}

var _ Store = (*Etcd)(nil)

// OpenEtcd connects to etcd and returns once it answered a read of the
// store's revision, within cfg.DialTimeout; an etcd that does not answer
// is an error naming the endpoints.
func OpenEtcd(cfg EtcdConfig) (*Etcd, error) {
	cfg = cfg.withDefaults()
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("store: etcd: no endpoints")
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		TLS:         cfg.TLS,
		Logger:      zap.NewNop(), // errors are returned, not logged
		// etcd accepts a request of MaxRequestBytes plus its gRPC
		// overhead; Apply refuses bigger ones itself (ErrTooBig).
		MaxCallSendMsgSize: cfg.MaxRequestBytes + 1<<20,
		MaxCallRecvMsgSize: math.MaxInt32,
		DialOptions: []grpc.DialOption{
			// Reconnect within a second or so of etcd coming back
			// (gRPC's default backoff grows to 2 minutes).
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
				BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second,
			}, MinConnectTimeout: time.Second}),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("store: etcd at %s: %w", strings.Join(cfg.Endpoints, ","), err)
	}
	e := &Etcd{c: c, cfg: cfg, k: etcdKeys(cfg.Prefix)}
	e.group.e = e
	c.KV = countingKV{KV: c.KV, n: &e.requests}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	if _, err := e.c.Get(ctx, e.k.revision()); err != nil {
		_ = c.Close()
		err = e.ioError("open", cfg.DialTimeout, err)
		if cfg.TLS == nil && errors.Is(err, context.DeadlineExceeded) {
			// An etcd that serves only TLS never completes a plain-text
			// handshake: it looks like one that does not answer.
			err = fmt.Errorf("%w (if etcd serves TLS only, dial it with its CA and a client certificate: --etcd-tls-ca, --etcd-tls-cert, --etcd-tls-key)", err)
		}
		return nil, err
	}
	if cfg.Cache {
		if err := e.startCache(); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return e, nil
}

func (e *Etcd) log(format string, args ...any) {
	if e.cfg.Log != nil {
		e.cfg.Log(format, args...)
	}
}

// Requests counts the requests sent to etcd since OpenEtcd, by kind
// (ReqRange, ReqTxnRead, ...; see RequestCounts).
func (e *Etcd) Requests() map[string]uint64 { return e.requests.snapshot() }

// Close ends the connection.
func (e *Etcd) Close() error {
	if e.cache != nil {
		e.cache.close()
	}
	if err := e.c.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("store: close etcd client: %w", err)
	}
	return nil
}

// ctx bounds one call.
func (e *Etcd) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), e.cfg.Timeout)
}

// ioError names the endpoints and, for a timeout, says so.
func (e *Etcd) ioError(what string, timeout time.Duration, err error) error {
	eps := strings.Join(e.cfg.Endpoints, ",")
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("store: %s: etcd at %s did not answer within %v: %w", what, eps, timeout, err)
	}
	return fmt.Errorf("store: %s: etcd at %s: %w", what, eps, err)
}

// FailApplies makes the next n Apply calls (single-op writes included) that
// pass validation fail with ErrInjected, changing nothing: the
// transaction is built and not sent.
func (e *Etcd) FailApplies(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failApply = n
}

// FailNodeStatusWrites makes the next n PutNodeStatus calls fail with
// ErrInjected, changing nothing; like FailApplies, before the commit.
func (e *Etcd) FailNodeStatusWrites(n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failStatus = n
}

// injected consumes one injected failure from *n.
func (e *Etcd) injected(n *int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if *n == 0 {
		return false
	}
	*n--
	return true
}

// maxAttempts bounds the optimistic retries of one write: each conflict
// means another write committed, so running out takes that many writers
// of the same keys at once.
const maxAttempts = 100

// errConflict: attempt lost to a concurrent write; retry.
var errConflict = errors.New("store: etcd: conflicting write")

// retry runs attempt until it returns anything but errConflict, at most
// maxAttempts times, waiting a short random while between tries so that
// writers that conflicted do not meet again in step.
func retry(ctx context.Context, attempt func() error) error {
	for i := 1; ; i++ {
		err := attempt()
		if !errors.Is(err, errConflict) {
			return err
		}
		if i == maxAttempts {
			return fmt.Errorf("%w: gave up after %d attempts", err, i)
		}
		wait := time.NewTimer(jitter(i))
		select {
		case <-ctx.Done():
			wait.Stop()
			return fmt.Errorf("%w after %d attempts: %w", errConflict, i, ctx.Err())
		case <-wait.C:
		}
	}
}

// jitter is the wait before attempt i+1 of a write that conflicted: up to
// i ms, at most 20.
func jitter(i int) time.Duration {
	return time.Duration(rand.Int64N(int64(min(i, 20))*int64(time.Millisecond) + 1))
}

// Grouped returns how many shared transactions of fenced writes were
// committed, and how many writes they held (etcd_group.go).
func (e *Etcd) Grouped() (txns, writes uint64) { return e.groups.Load(), e.grouped.Load() }
