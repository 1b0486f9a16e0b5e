package distributed

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is one child process of a Fleet: its output goes to a log file, and
// the first stdout line that starts with a given prefix says it is ready.
type proc struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser // closed by cmd.Wait
	done  chan struct{}
	err   error // the exit, once done is closed
	log   string
	mu    sync.Mutex // serializes sends
}

// startProc starts bin with args, logging to logPath, and waits (up to
// timeout) for a stdout line starting with ready; it returns that line.
// With ready "" it returns once the process started, without waiting.
func startProc(name, bin string, args []string, logPath, ready string, timeout time.Duration) (*proc, string, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, "", err
	}
	fmt.Fprintf(logf, "=== %s: %s %s\n", time.Now().Format(time.RFC3339Nano), bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stderr = logf
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = logf.Close()
		return nil, "", err
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		_ = logf.Close()
		return nil, "", err
	}
	cmd.SysProcAttr = fleetProcAttr()
	if err := cmd.Start(); err != nil {
		_ = logf.Close()
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, stdin: in, done: make(chan struct{}), log: logPath}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		found := false
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(logf, line)
			if !found && strings.HasPrefix(line, ready) {
				found = true
				lines <- line
			}
		}
		_, _ = io.Copy(logf, out)
		p.err = cmd.Wait()
		_ = logf.Close()
		close(p.done)
	}()
	if ready == "" {
		return p, "", nil
	}
	select {
	case line := <-lines:
		return p, line, nil
	case <-p.done:
		return nil, "", fmt.Errorf("%s exited before it was ready (%v); its log: %s\n%s", name, p.err, logPath, tailFile(logPath, 20))
	case <-time.After(timeout):
		_ = p.kill()
		return nil, "", fmt.Errorf("%s not ready within %s; its log: %s\n%s", name, timeout, logPath, tailFile(logPath, 20))
	}
}

// kill sends SIGKILL to the process group and waits for the exit.
func (p *proc) kill() error { return p.signal(syscall.SIGKILL, 10*time.Second) }

// stop sends SIGTERM, and SIGKILL if it has not exited within grace.
func (p *proc) stop(grace time.Duration) error {
	if err := p.signal(syscall.SIGTERM, grace); err == nil {
		return nil
	}
	return p.kill()
}

var errStillRunning = errors.New("still running")

func (p *proc) signal(sig syscall.Signal, wait time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
		return nil
	case <-time.After(wait):
		return fmt.Errorf("%s: %w %s after %v", p.name, errStillRunning, wait, sig)
	}
}

// send writes line (and a newline) to the process's stdin, in one write.
func (p *proc) send(line []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited() {
		return fmt.Errorf("%s: not running", p.name)
	}
	if _, err := p.stdin.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("%s: %w", p.name, err)
	}
	return nil
}

// exited reports whether the process has ended.
func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tailFile returns the last n lines of path (for error messages).
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
