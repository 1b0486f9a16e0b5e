package agent

import (
	"slices"
	"testing"
)

// A workload's uses are kept sorted by volume, each volume once; a volume
// named twice takes the read-only flag of its last use, as the map they
// replaced did.
func TestUsesOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Use
		want []Use
	}{
		{"none", nil, []Use{}},
		{"sorted", []Use{{"b", false}, {"a", true}}, []Use{{"a", true}, {"b", false}}},
		{"twice, last wins", []Use{{"a", true}, {"b", false}, {"a", false}}, []Use{{"a", false}, {"b", false}}},
	} {
		if got := usesOf(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%s: usesOf(%v) = %v, want %v", tc.name, tc.in, got, tc.want)
		}
	}
}
