package distributed

import (
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
)

// The majority rule: a member gives up when the members it reaches
// (itself and its peers with a recent round trip) are no majority of
// those etcd lists, and of two exact halves the one holding the lowest
// member ID stays.
func TestLosingSide(t *testing.T) {
	for _, tc := range []struct {
		name    string
		self    string
		members []string
		stale   []string
		losing  bool
	}{
		{"alone", "a", []string{"a"}, nil, false},
		{"all reached", "b", []string{"a", "b", "c"}, nil, false},
		{"one of three lost", "b", []string{"a", "b", "c"}, []string{"c"}, false},
		{"cut off from both", "a", []string{"a", "b", "c"}, []string{"b", "c"}, true},
		{"half of two, with the lowest ID", "a", []string{"a", "b"}, []string{"b"}, false},
		{"half of two, without it", "b", []string{"a", "b"}, []string{"a"}, true},
		{"half of four, with the lowest", "b", []string{"a", "b", "c", "d"}, []string{"c", "d"}, false},
		{"half of four, without it", "c", []string{"a", "b", "c", "d"}, []string{"a", "b"}, true},
		{"not yet listed itself", "d", []string{"a", "b", "c"}, []string{"a", "b"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &membership{self: &cluster.Member{Id: tc.self}, ttl: 10 * time.Second}
			current := map[string]*cluster.Member{}
			for _, id := range tc.members {
				current[id] = &cluster.Member{Id: id}
			}
			stale := map[string]bool{}
			for _, id := range tc.stale {
				stale[id] = true
			}
			err := p.losing(current, stale)
			if got := err != nil; got != tc.losing {
				t.Fatalf("losing = %v, want %v", err, tc.losing)
			}
			if err != nil && !errors.Is(err, ErrPeersUnreachable) {
				t.Errorf("%v does not wrap ErrPeersUnreachable", err)
			}
		})
	}
}

// The topology given to Proto.Actor leaves stale peers out, never this
// member itself.
func TestObserveLeavesStalePeersOut(t *testing.T) {
	r := &reach{stale: map[string]bool{"c": true, "a": true}}
	members := map[string]*cluster.Member{"a": {Id: "a"}, "b": {Id: "b"}, "c": {Id: "c"}}
	got := slices.Sorted(maps.Keys(r.observe(members, "a")))
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("published %v, want %v", got, want)
	}
	if len(r.current) != 3 {
		t.Errorf("current = %v, want what etcd lists, all three", r.current)
	}
}
