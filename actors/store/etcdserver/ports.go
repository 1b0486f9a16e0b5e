package etcdserver

import (
	"errors"
	"fmt"
	"net"
	"strconv"
)

// errPortTaken: etcd could not bind a port picked for it; another process
// took it between the pick and etcd's bind.
var errPortTaken = errors.New("etcdserver: a port is taken")

// freePorts returns n distinct free ports of 127.0.0.1, picked by the
// kernel: each was free when picked, and the kernel hands ports out in
// turn, so tests starting servers at once get different ones. Another
// process may still take one before etcd binds it (Start then picks
// again).
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("etcdserver: pick a free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func loopback(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
