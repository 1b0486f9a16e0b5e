package journal

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// Kinds of records.
const (
	// KindStart: the process started (Text says which).
	KindStart = "start"
	// KindMountStart: a stage or publish (Op) of Volume at Target is about
	// to call mount; KindMountEnd: it returned (Mounted: a mount is at
	// Target afterwards).
	KindMountStart = "mount-start"
	KindMountEnd   = "mount-end"
	// KindUnmountStart: an unstage or unpublish is about to be called;
	// KindUnmountEnd: it returned (Mounted: a mount is still at Target).
	KindUnmountStart = "unmount-start"
	KindUnmountEnd   = "unmount-end"
	// KindDevice: the agent resolved Volume's device (Text) on Node.
	KindDevice = "device"
	// KindStatus: Node's status is durable as Attached and InUse say,
	// written with Epoch (0: unfenced), or read back (Text says so).
	KindStatus = "status"
	// KindStatusFailed: a write of Node's status failed (Err).
	KindStatusFailed = "status-failed"
	// KindEvent: an event of type Op about Volume on Node.
	KindEvent = "event"
	// KindRestart: an actor (Text) was restarted or is to be respawned.
	KindRestart = "restart"
	// KindJoined: a controller member registered in the cluster's
	// membership and takes part in the placement from now on (Text: its
	// member ID).
	KindJoined = "joined"
	// KindCloudCall: a controller member is about to call the cloud (Op:
	// attach, detach, volumes_are_attached, instance_volumes) about Volume
	// (attach, detach) and the instances in Text.
	KindCloudCall = "cloud-call"
)

// Record is one line of a journal. Fields are set as the kind needs.
type Record struct {
	Time     int64             `json:"t"` // unix nanoseconds, set by Write
	Kind     string            `json:"k"`
	Node     string            `json:"node,omitempty"`
	Volume   string            `json:"vol,omitempty"`
	Op       string            `json:"op,omitempty"`
	Target   string            `json:"target,omitempty"`
	Mounted  bool              `json:"mounted,omitempty"`
	Err      string            `json:"err,omitempty"`
	Attached map[string]string `json:"attached,omitempty"` // volume -> device
	InUse    []string          `json:"in_use,omitempty"`
	Epoch    uint64            `json:"epoch,omitempty"`
	Text     string            `json:"text,omitempty"`
}

// Writer appends records to one file. It is safe for concurrent use; a nil
// *Writer writes nothing, so that journaling can be left off.
type Writer struct {
	mu  sync.Mutex
	f   *os.File
	err error // the first failed write
}

// Open opens path for appending, creating it.
func Open(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	return &Writer{f: f}, nil
}

// Write stamps r with the time now and appends it. The time is read under
// the lock, so that a journal's records are in time order; a record is
// therefore stamped when it is written, never earlier: callers write at
// the point the record describes (before a call it announces, after one
// it reports). A failed write is remembered (Err) and later ones dropped.
func (w *Writer) Write(r Record) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return
	}
	r.Time = time.Now().UnixNano()
	b, err := json.Marshal(r)
	if err == nil {
		_, err = w.f.Write(append(b, '\n'))
	}
	if err != nil {
		w.err = fmt.Errorf("journal: %w", err)
	}
}

// Err is the first write error, if any.
func (w *Writer) Err() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file and returns the first write error, if any.
func (w *Writer) Close() error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.err, w.f.Close())
}

// Read returns the records of the journal at path, in order. A last line
// without its newline (a write cut short) is left out; any other line
// that does not decode is an error.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	defer f.Close()
	var out []Record
	br := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a partial last line, if any, is dropped
		}
		if err != nil {
			return nil, fmt.Errorf("journal: %s: %w", path, err)
		}
		var r Record
		if err := json.Unmarshal(bytes.TrimSpace(line), &r); err != nil {
			return nil, fmt.Errorf("journal: %s line %d: %w", path, n, err)
		}
		out = append(out, r)
	}
}
