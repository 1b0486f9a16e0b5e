package remoting

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud/testkit"
)

// proc is a node process (see node_test.go), as the test drives it.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	enc     *json.Encoder
	replies chan reply
	stderr  syncBuffer
	addr    string
	closed  bool
}

// spawn starts a node process for s and waits for its address; cleanup
// ends it and fails the test if it did not exit cleanly (a data race in
// the node makes it exit with status 66).
func spawn(t *testing.T, s nodeSpec) *proc {
	t.Helper()
	spec, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t, replies: make(chan reply, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	// Under the race detector a process sleeps a second at exit unless
	// told not to.
	p.cmd.Env = append(os.Environ(), nodeEnv+"="+string(spec), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	p.cmd.Stderr = &p.stderr
	in, err := p.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.enc = json.NewEncoder(in)
	go func() {
		defer close(p.replies)
		dec := json.NewDecoder(out)
		for {
			var r reply
			if dec.Decode(&r) != nil {
				return
			}
			p.replies <- r
		}
	}()
	t.Cleanup(p.close)
	p.addr = p.next("its address").Addr
	if p.addr == "" {
		t.Fatalf("node gave no address; stderr: %s", p.stderr.String())
	}
	return p
}

// spawnNode is spawn for a node configured by c alone.
func spawnNode(t *testing.T, c Config) *proc {
	t.Helper()
	return spawn(t, nodeSpec{Config: c})
}

func (p *proc) next(what string) reply {
	p.t.Helper()
	select {
	case r, ok := <-p.replies:
		if !ok {
			p.t.Fatalf("node ended before %s: %v; stderr: %s", what, p.cmd.Wait(), p.stderr.String())
		}
		return r
	case <-time.After(2 * wait):
		_ = p.cmd.Process.Kill()
		p.t.Fatalf("node did not answer %s in time; stderr: %s", what, p.stderr.String())
	}
	return reply{}
}

// do sends c and returns the node's reply.
func (p *proc) do(c command) reply {
	p.t.Helper()
	if err := p.enc.Encode(c); err != nil {
		p.t.Fatalf("%s: %v; stderr: %s", c.Op, err, p.stderr.String())
	}
	return p.next(c.Op)
}

// ping has p send a Heartbeat named name to to's echo and checks the answer.
func (p *proc) ping(to *proc, name string) {
	p.t.Helper()
	r := p.do(command{Op: "ping", To: to.addr, Name: name})
	if r.Err != "" || r.Answer != "echo "+name {
		p.t.Fatalf("heartbeat %q: answer %q, error %q", name, r.Answer, r.Err)
	}
}

// logs are p's log entries whose message contains msg.
func (p *proc) logs(msg string) []map[string]any {
	p.t.Helper()
	var out []map[string]any
	for _, e := range p.do(command{Op: "logs"}).Logs {
		if strings.Contains(e["msg"].(string), msg) {
			out = append(out, e)
		}
	}
	return out
}

func (p *proc) received() []string {
	p.t.Helper()
	return p.do(command{Op: "received"}).Received
}

func (p *proc) close() {
	if p.closed {
		return
	}
	p.closed = true
	_ = p.enc.Encode(command{Op: "quit"})
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			p.t.Errorf("node %s: %v; stderr: %s", p.addr, err, p.stderr.String())
		}
	case <-time.After(2 * wait):
		_ = p.cmd.Process.Kill()
		p.t.Errorf("node %s did not exit; stderr: %s", p.addr, p.stderr.String())
	}
}

// syncBuffer is safe for a child's output goroutines and the test at once.
type syncBuffer = testkit.Buffer
