package volume

import (
	"maps"
	"testing"
	"time"
)

// nodeInfos behaves as the map it replaced: set replaces, zero info
// forgets, get of an unknown node is zero.
func TestNodeInfos(t *testing.T) {
	var ns nodeInfos
	ready := NodeInfo{Ready: true}
	busy := NodeInfo{Ready: true, InUse: true}
	gone := NodeInfo{NotReadySince: time.Unix(5, 0)}
	ns.set("n1", ready)
	ns.set("n2", gone)
	ns.set("n1", busy)
	ns.set("n3", NodeInfo{}) // nothing to forget
	if got := ns.get("n1"); got != busy {
		t.Errorf("n1: %+v, want %+v", got, busy)
	}
	if want := map[NodeName]NodeInfo{"n1": busy, "n2": gone}; !maps.Equal(ns.toMap(), want) {
		t.Errorf("toMap = %v, want %v", ns.toMap(), want)
	}
	ns.set("n1", NodeInfo{})
	if got := ns.get("n1"); got != (NodeInfo{}) {
		t.Errorf("n1 after forgetting: %+v", got)
	}
	if len(ns) != 1 || ns.get("n2") != gone {
		t.Errorf("after forgetting n1: %+v", ns)
	}
	ns.set("n2", NodeInfo{})
	if ns.toMap() != nil {
		t.Errorf("empty toMap = %v, want nil", ns.toMap())
	}
}
