package controller

import (
	"fmt"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/syncer"
	"github.com/tether/tether/cloud"
)

// EventUnexpectedAttachment: a cloud whose listing may overstate
// (cloud.ListingMayOverstate, a CSI driver's published_node_ids) lists
// a volume on a node where no node status has it. The CSI spec: the list
// "MAY include nodes not published to or reported by the SP. The CO MUST
// be resilient to that." So it is reported, once while it lasts, and
// nothing else: never a detach of an attachment that a workload may use
// or that tether never made. An attachment tether did start (its reply
// lost) is already Uncertain in its volume actor, which settles it by
// repeating the attach or the detach.
const EventUnexpectedAttachment = "UnexpectedAttachment"

type extraKey struct {
	vol  cloud.VolumeID
	node cloud.NodeName
}

// extra reports a listed attachment no node status has, the first time a
// pass sees it.
func (a *SyncRunner) extra(f syncer.Finding) {
	k := extraKey{f.Volume, f.Node}
	if a.extras == nil {
		a.extras = map[extraKey]uint64{}
	}
	_, seen := a.extras[k]
	a.extras[k] = a.pass
	a.stats.Dangling++
	if seen {
		return
	}
	msg := fmt.Sprintf("the cloud lists volume %q as attached to node %q, where tether did not attach it: not detaching it (its listing may name nodes a volume is not attached to)", f.Volume, f.Node)
	a.log.WithFields(map[string]any{"volume": f.Volume, "node": f.Node}).Info(msg)
	a.host.Record(events.Ref{Kind: events.KindVolume, Name: string(f.Volume)}, EventUnexpectedAttachment, f.Node, true, msg)
}

// forgetExtras forgets the extras that the full pass pass did not see
// again: if one comes back, it is reported again.
func (a *SyncRunner) forgetExtras(pass uint64) {
	for k, p := range a.extras {
		if p != pass {
			delete(a.extras, k)
		}
	}
}
