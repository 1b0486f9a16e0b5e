package controller

import (
	"slices"
	"time"

	"github.com/tether/tether/actors/volume"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

func modeFromProto(m messages.AccessMode) cloud.AccessMode {
	if m == messages.AccessMode_ACCESS_MODE_MULTI_NODE {
		return cloud.MultiNode
	}
	return cloud.Exclusive
}

func modeToProto(m cloud.AccessMode) messages.AccessMode {
	if m == cloud.MultiNode {
		return messages.AccessMode_ACCESS_MODE_MULTI_NODE
	}
	return messages.AccessMode_ACCESS_MODE_EXCLUSIVE
}

func nodeNames(ss []string) []cloud.NodeName {
	out := make([]cloud.NodeName, len(ss))
	for i, s := range ss {
		out[i] = cloud.NodeName(s)
	}
	return out
}

func nodeInfoFromProto(m *messages.NodeVolumeStateChanged) volume.NodeInfo {
	return volume.NodeInfo{InUse: m.InUse, Ready: m.Ready, NotReadySince: fromNanos(m.NotReadySinceUnixNano), OutOfService: m.OutOfService}
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func toNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
