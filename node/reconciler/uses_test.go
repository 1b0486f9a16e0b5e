package reconciler

import (
	"slices"
	"testing"
)

// A workload's uses are kept sorted by volume, each volume once; a volume
// named twice takes the read-only flag of its last use, as the map they
// replaced did.
func TestAppendUses(t *testing.T) {
	kept := []use{{vol: "z", w: 0}}
	for _, tc := range []struct {
		name string
		in   []Use
		want []use
	}{
		{"none", nil, nil},
		{"sorted", []Use{{"b", false}, {"a", true}}, []use{{"a", true, 1}, {"b", false, 1}}},
		{"twice, last wins", []Use{{"a", true}, {"b", false}, {"a", false}}, []use{{"a", false, 1}, {"b", false, 1}}},
	} {
		got := appendUses(slices.Clone(kept), tc.in, 1)
		if !slices.Equal(got[:1], kept) || !slices.Equal(got[1:], tc.want) {
			t.Errorf("%s: appendUses(%v, %v) = %v, want %v then %v", tc.name, kept, tc.in, got, kept, tc.want)
		}
	}
}
