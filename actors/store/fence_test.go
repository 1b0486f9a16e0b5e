package store

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

func TestClaimsIncrease(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		last := map[string]uint64{}
		for _, owner := range []string{"volume/a", "node/a", "volume/a", "volume/a", "node/a", "volume/b", "volume/a"} {
			e, err := s.Claim(owner)
			must(t, err)
			if e == 0 || e <= last[owner] {
				t.Fatalf("Claim(%s) = %d after %d; want a nonzero epoch greater than the last", owner, e, last[owner])
			}
			last[owner] = e
		}
	})
}

// fenceWriter is one kind of fenced write: a value (told apart by n) of
// the object owned by owner, and how to read back which value is stored.
type fenceWriter struct {
	name         string
	owner, other string // the write's owner; another owner sharing its prefix
	write        func(s Store, n int, epoch uint64) error
	read         func(t *testing.T, s Store) int
}

var fenceWriters = []fenceWriter{
	{"intent", VolumeOwner("v1"), VolumeOwner("v10"),
		func(s Store, n int, epoch uint64) error {
			return s.PutIntent(Intent{Volume: "v1", Node: "n1", Op: uint64(n), Deadline: time.Unix(int64(n), 0).UTC(), Epoch: epoch})
		},
		func(t *testing.T, s Store) int {
			ins, err := s.Intents("v1")
			must(t, err)
			if len(ins) != 1 {
				t.Fatalf("Intents(v1) = %+v, want one", ins)
			}
			return int(ins[0].Op)
		}},
	{"node status", NodeOwner("n1"), NodeOwner("n10"),
		func(s Store, n int, epoch uint64) error {
			return s.PutNodeStatusAt(nodestatus.Status{Name: "n1", InUseSeq: uint64(n),
				VolumesAttached: map[cloud.VolumeID]string{cloud.VolumeID(rune('a' + n%26)): "/dev/x"}}, epoch)
		},
		func(t *testing.T, s Store) int {
			st, ok, err := s.NodeStatus("n1")
			must(t, err)
			if !ok {
				t.Fatal("NodeStatus(n1) missing")
			}
			// The index follows the record: a refused write touched neither.
			with, err := s.StatusesWithVolume(cloud.VolumeID(rune('a' + st.InUseSeq%26)))
			must(t, err)
			if len(with) != 1 || !reflect.DeepEqual(with[0], st) {
				t.Fatalf("StatusesWithVolume = %+v, want %+v", with, st)
			}
			return int(st.InUseSeq)
		}},
}

func TestFencedWrites(t *testing.T) {
	const self, other = "self", "other"
	tests := []struct {
		name   string
		claims []string                // claimed in order, giving epochs e[0], e[1], ...
		epoch  func(e []uint64) uint64 // the write's
		fenced bool
	}{
		{"the latest claim", []string{self}, func(e []uint64) uint64 { return e[0] }, false},
		{"a superseded claim", []string{self, self}, func(e []uint64) uint64 { return e[0] }, true},
		{"the latest after a superseded one", []string{self, self}, func(e []uint64) uint64 { return e[1] }, false},
		{"epoch 0 is unfenced", []string{self, self}, func([]uint64) uint64 { return 0 }, false},
		{"another owner's claim leaves it alone", []string{self, other}, func(e []uint64) uint64 { return e[0] }, false},
		{"another owner's epoch", []string{self, other}, func(e []uint64) uint64 { return e[1] }, true},
		{"an owner never claimed", nil, func([]uint64) uint64 { return 7 }, true},
		{"an epoch never handed out", []string{self}, func(e []uint64) uint64 { return e[0] + 1000 }, true},
	}
	for _, w := range fenceWriters {
		for _, tt := range tests {
			t.Run(w.name+"/"+tt.name, func(t *testing.T) {
				forEach(t, func(t *testing.T, s testStore) {
					must(t, w.write(s, 1, 0))
					var e []uint64
					for _, c := range tt.claims {
						owner := map[string]string{self: w.owner, other: w.other}[c]
						epoch, err := s.Claim(owner)
						must(t, err)
						e = append(e, epoch)
					}
					err := w.write(s, 2, tt.epoch(e))
					want := 2
					if tt.fenced {
						want = 1
						if !errors.Is(err, ErrFenced) {
							t.Fatalf("write with epoch %d (claims %v) = %v, want ErrFenced", tt.epoch(e), e, err)
						}
					} else {
						must(t, err)
					}
					if got := w.read(t, s); got != want {
						t.Fatalf("read back value %d, want %d", got, want)
					}
				})
			})
		}
	}
}

// TestNoFencedWriteLandsAfterClaim: a writer keeps writing with its epoch
// while a newer claim is made; once Claim returned, what the store holds
// is final: no write of the old epoch lands after it.
func TestNoFencedWriteLandsAfterClaim(t *testing.T) {
	for _, w := range fenceWriters {
		t.Run(w.name, func(t *testing.T) {
			forEach(t, func(t *testing.T, s testStore) {
				old, err := s.Claim(w.owner)
				must(t, err)
				wrote := make(chan int, 1)
				stopped := make(chan error, 1)
				go func() {
					for n := 1; ; n++ {
						if err := w.write(s, n, old); err != nil {
							stopped <- err
							return
						}
						if n == 1 {
							wrote <- n
						}
					}
				}()
				select {
				case <-wrote:
				case err := <-stopped:
					t.Fatalf("the first write with the latest epoch failed: %v", err)
				}
				_, err = s.Claim(w.owner)
				must(t, err)
				after := w.read(t, s)
				select {
				case err := <-stopped:
					if !errors.Is(err, ErrFenced) {
						t.Fatalf("the old writer stopped with %v, want ErrFenced", err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("the old writer is still writing 30 s after a newer claim")
				}
				if got := w.read(t, s); got != after {
					t.Fatalf("value %d right after the claim, %d once the old writer stopped: a fenced write landed after the claim", after, got)
				}
			})
		})
	}
}

// TestClaimWaitsOnlyForItsOwner: a claim waits for the fenced writes of
// its own owner in progress, never for another owner's (with one lock for
// all, every volume actor's start waited for every write in flight, each
// an fsync, and a fleet start crawled at about 80 volumes a second).
func TestClaimWaitsOnlyForItsOwner(t *testing.T) {
	var f localFences
	a, err := f.Claim("volume/a")
	must(t, err)
	inWrite, release, written := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		written <- f.write("volume/a", a, func() error {
			close(inWrite)
			<-release
			return nil
		})
	}()
	<-inWrite
	other := make(chan error, 1)
	go func() { _, err := f.Claim("volume/b"); other <- err }()
	select {
	case err := <-other:
		must(t, err)
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a claim of volume/b waited for a write of volume/a")
	}
	same := make(chan uint64, 1)
	go func() { e, _ := f.Claim("volume/a"); same <- e }()
	select {
	case <-same:
		close(release)
		t.Fatal("a claim of volume/a returned while a write of its older epoch was in progress")
	case <-time.After(50 * time.Millisecond): // the claim must still be waiting: a bounded look, not a synchronization
	}
	close(release)
	must(t, <-written)
	if e := <-same; e <= a {
		t.Fatalf("the new claim of volume/a got epoch %d, not above %d", e, a)
	}
	if err := f.write("volume/a", a, func() error { return nil }); !errors.Is(err, ErrFenced) {
		t.Fatalf("a write with the old epoch after the new claim: %v, want ErrFenced", err)
	}
}
