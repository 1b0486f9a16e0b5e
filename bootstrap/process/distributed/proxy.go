package distributed

import (
	"errors"
	"io"
	"net"
	"sync"
)

// proxy forwards TCP connections from a fixed loopback address to a
// target; Block cuts every connection and refuses new ones until Unblock.
// A member advertises its proxy's address, so blocking the proxy cuts the
// member off from the remote traffic of every other process (what reaches
// it, and the replies to what it sends): a network partition, without
// touching the host's firewall.
type proxy struct {
	lis     net.Listener
	mu      sync.Mutex
	target  string
	blocked bool
	conns   map[net.Conn]bool
	wg      sync.WaitGroup
	closed  bool
}

// newProxy listens on addr ("127.0.0.1:0": a free port).
func newProxy(addr string) (*proxy, error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{lis: lis, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

func (p *proxy) addr() string { return p.lis.Addr().String() }

// retarget sends new connections to target (a restarted member listens on
// a new port) and cuts the old ones.
func (p *proxy) retarget(target string) {
	p.mu.Lock()
	p.target = target
	p.mu.Unlock()
	p.cut()
}

// block cuts every connection and refuses new ones; unblock lets them
// through again.
func (p *proxy) block(on bool) {
	p.mu.Lock()
	p.blocked = on
	p.mu.Unlock()
	if on {
		p.cut()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		_ = c.Close()
	}
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return // closed
		}
		p.mu.Lock()
		target, blocked := p.target, p.blocked || p.closed
		p.mu.Unlock()
		if blocked || target == "" {
			_ = c.Close()
			continue
		}
		up, err := net.Dial("tcp", target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = c.Close()
			_ = up.Close()
			return
		}
		p.conns[c], p.conns[up] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, up)
		go p.pipe(up, c)
	}
}

// pipe copies from src to dst; when either side ends, both close.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	_ = dst.Close()
	_ = src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

// close stops listening, cuts everything and waits for the copies.
func (p *proxy) close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	err := p.lis.Close()
	p.cut()
	p.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}
