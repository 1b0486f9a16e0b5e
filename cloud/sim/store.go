package sim

// The files of the durable state (see state.go for what they hold): Open
// loads them; the writer (commit.go) appends to the log and compacts.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/tether/tether/cloud/files/durable"
)

// logSuffix names the log after the snapshot: <StatePath>.log.
const logSuffix = ".log"

// compactMinGroups is how many groups the log holds at least before it is
// folded into a new snapshot; it is folded once, besides, it is larger than
// the snapshot. A snapshot is thus written at most once per that many
// groups and per the snapshot's size in log bytes: its cost, spread over
// the changes, does not grow with the cloud.
const compactMinGroups = 1000

// store is the durable side of a Cloud with Config.StatePath.
type store struct {
	path    string // the snapshot, absolute
	logPath string
	cond    *sync.Cond // on Cloud.mu; broadcast when groups settle
	fsyncs  atomic.Int64

	// Guarded by Cloud.mu.
	queue   []*pending // changes applied in memory, waiting for a writer
	writing bool       // a writer (one of the callers) owns the fields below
	last    uint64     // sequence number of the last change queued
	settled uint64     // every change up to it is durable, or failed and undone

	// Owned by the writer; by Open before the Cloud is shared.
	img       *image   // what the files hold: the durable state
	gen       uint64   // the snapshot's generation
	maxGen    uint64   // the highest generation seen on disk
	log       *os.File // the log of gen, open to append; nil: start a new generation first
	logInfo   fs.FileInfo
	logSize   int64 // bytes of the log that are durable
	groups    int   // groups in the log
	snapSize  int64 // bytes of the snapshot
	folded    bool  // the snapshot alone holds img
	minGroups int   // compactMinGroups; tests lower it

	// Test seams: write replaces a file atomically (writeFileAtomic),
	// appendSync appends to the log and syncs it.
	write      func(path string, data []byte) (renamed bool, err error)
	appendSync func(f *os.File, data []byte) error
}

// pending is one change waiting to be durable.
type pending struct {
	seq     uint64
	rec     logRecord
	data    []byte   // rec, encoded
	changes []Change // for the observers, once durable
	done    bool     // written, or failed and undone (err)
	err     error
}

func newStore(path string, mu *sync.Mutex) *store {
	s := &store{path: path, logPath: path + logSuffix, cond: sync.NewCond(mu), minGroups: compactMinGroups}
	s.write, s.appendSync = s.writeFileAtomic, s.appendAndSync
	return s
}

// Open is New that loads the state of Config.StatePath, if set: its
// snapshot (a missing one is an empty cloud) and the changes its log holds.
// A log holding changes is folded into a new snapshot at once (best
// effort: if that fails, the first change does it); otherwise nothing is
// written until the first change. It fails if a file exists but cannot be
// read, is not a snapshot or log of a supported version, holds a corrupt
// record other than a torn last one, or if the state is inconsistent (an
// attachment to an unknown volume, two instances backing one node, ...).
// Without StatePath it never fails.
func Open(cfg Config) (*Cloud, error) {
	c := newCloud(cfg)
	if cfg.StatePath == "" {
		return c, nil
	}
	path, err := filepath.Abs(cfg.StatePath)
	if err != nil {
		return nil, fmt.Errorf("sim: state file %s: %w", cfg.StatePath, err)
	}
	s := newStore(path, &c.mu)
	st, fold, err := s.load()
	if err != nil {
		return nil, err
	}
	c.applyWorldLocked(st)
	c.counters.Calls = nonNil(maps.Clone(st.Counters.Calls))
	c.counters.Errors = nonNil(maps.Clone(st.Counters.Errors))
	c.counters.Throttled = nonNil(maps.Clone(st.Counters.Throttled))
	c.state = s
	durable.RemoveStaleTemps(path)
	durable.RemoveStaleTemps(s.logPath)
	if fold {
		_ = s.compact()
	}
	return c, nil
}

// load reads the snapshot and the log into s.img and returns the state
// they hold, validated, and whether the log holds changes to fold. A log
// of the snapshot's generation without changes is kept open to append to.
func (s *store) load() (st *state, fold bool, err error) {
	st = &state{Version: stateVersion}
	data, err := os.ReadFile(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, false, fmt.Errorf("sim: read state file: %w", err)
	default:
		if st, err = decodeState(data); err != nil {
			return nil, false, fmt.Errorf("sim: state file %s: %w", s.path, err)
		}
		s.snapSize, s.folded = int64(len(data)), true
	}
	s.gen, s.maxGen, s.img = st.Generation, st.Generation, imageOf(st)
	lc, ok, err := readLog(s.logPath)
	if err != nil {
		return nil, false, err
	}
	s.maxGen = max(s.maxGen, lc.gen)
	if !ok || lc.gen != s.gen {
		return st, false, nil // none, or left over from another snapshot
	}
	for _, g := range lc.groups {
		for i := range g {
			s.img.apply(&g[i])
		}
	}
	if len(lc.groups) == 0 && !lc.torn {
		s.openLog(lc.end) // best effort: without it the first change starts a new generation
		return st, false, nil
	}
	st = s.img.state(s.gen)
	if err := st.validate(); err != nil {
		return nil, false, fmt.Errorf("sim: state file %s with its log %s: inconsistent state: %w", s.path, s.logPath, err)
	}
	s.folded = false
	return st, true, nil
}

// openLog opens the log of the current generation to append at end.
func (s *store) openLog(end int64) {
	f, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != end {
		_ = f.Close()
		return
	}
	s.log, s.logInfo, s.logSize = f, fi, end
}

// compact writes img as the snapshot of a new generation, then starts that
// generation's empty log. A crash at any point loads img: before the new
// snapshot is in place, the old snapshot and its log hold it; after, the
// new snapshot does, and the old log, of another generation, is ignored.
// On error s.log is nil: the next write compacts again.
func (s *store) compact() error {
	s.closeLog()
	gen := s.maxGen + 1
	data, err := json.Marshal(s.img.state(gen))
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	renamed, err := s.write(s.path, data)
	if renamed {
		s.gen, s.maxGen, s.snapSize, s.folded = gen, gen, int64(len(data)), true
	}
	if err != nil {
		return err
	}
	if _, err := s.write(s.logPath, headerFrame(gen)); err != nil {
		return err
	}
	f, err := os.OpenFile(s.logPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return err
	}
	s.log, s.logInfo, s.logSize, s.groups = f, fi, fi.Size(), 0
	return nil
}

// closeLog closes the log; the next write starts a new generation.
func (s *store) closeLog() {
	if s.log != nil {
		_ = s.log.Close()
		s.log = nil
	}
}

// compactDue reports whether the log is large enough to fold.
func (s *store) compactDue() bool {
	return s.groups >= s.minGroups && s.logSize > s.snapSize
}

// checkLog checks that the log is still at its path and that its directory
// is writable (a compaction writes there), so that a state directory
// removed or made read-only fails the changes at once rather than later.
func (s *store) checkLog() error {
	dir := filepath.Dir(s.logPath)
	if err := dirWritable(dir); err != nil {
		return fmt.Errorf("state directory %s: %w", dir, err)
	}
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return err
	}
	if !os.SameFile(fi, s.logInfo) {
		return fmt.Errorf("%s was replaced by another file", s.logPath)
	}
	return nil
}

// appendAndSync appends data to f and syncs f.
func (s *store) appendAndSync(f *os.File, data []byte) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	s.fsyncs.Add(1)
	return f.Sync()
}

// writeFileAtomic replaces path with a file holding data, mode 0600: it
// writes a temporary file in the same directory, syncs it, renames it over
// path and syncs the directory. renamed reports whether the rename
// happened (then path holds data, durably unless err is not nil).
func (s *store) writeFileAtomic(path string, data []byte) (renamed bool, err error) {
	return writeFileAtomic(path, data, &s.fsyncs)
}

func writeFileAtomic(path string, data []byte, fsyncs *atomic.Int64) (renamed bool, err error) {
	renamed, err = durable.Replace(path, data, stateFileMode)
	if renamed {
		fsyncs.Add(2) // the file's and its directory's
	}
	return renamed, err
}

// ReadCounters returns the counters saved at statePath (the snapshot and
// its log) without writing anything, for tools and tests that look at the
// files of a cloud another process may be running: it reads again when it
// meets a compaction half done.
func ReadCounters(statePath string) (Counters, error) {
	path, err := filepath.Abs(statePath)
	if err != nil {
		return Counters{}, fmt.Errorf("sim: state file %s: %w", statePath, err)
	}
	var st *state
	for try := 0; try < 5; try++ {
		var newer bool
		if st, newer, err = readState(path); err != nil {
			return Counters{}, err
		}
		if !newer {
			break
		}
	}
	return Counters{Calls: nonNil(st.Counters.Calls), Errors: nonNil(st.Counters.Errors),
		Throttled: nonNil(st.Counters.Throttled), AttachNew: st.Counters.AttachNew, DetachNew: st.Counters.DetachNew}, nil
}

// readState returns the state the files at path hold, as Open loads it,
// without writing; newer reports a log of a newer generation than the
// snapshot, ignored (a compaction half done, or a snapshot put back).
func readState(path string) (st *state, newer bool, err error) {
	s := newStore(path, new(sync.Mutex))
	if _, _, err := s.load(); err != nil {
		return nil, false, err
	}
	s.closeLog()
	return s.img.state(s.gen), s.maxGen > s.gen, nil
}
