package cloud

import (
	"fmt"
	"testing"
)

// Sentinel is the way back from Classify: every kind's sentinel, wrapped,
// classifies as that kind.
func TestSentinelInvertsClassify(t *testing.T) {
	for k := KindRetryable; k <= KindNotFound; k++ {
		err := fmt.Errorf("provider: %w", k.Sentinel())
		if got := Classify(err); got != k {
			t.Errorf("Classify(wrapped %v.Sentinel()) = %v", k, got)
		}
	}
	if KindNone.Sentinel() != nil || Kind(99).Sentinel() != nil {
		t.Error("KindNone or an unknown kind has a sentinel")
	}
}
