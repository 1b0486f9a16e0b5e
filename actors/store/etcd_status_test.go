package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// TestEtcdStatusWriteCostsWhatChanged: a node status write touches, in
// etcd, the head and the keys of the volumes whose place changed, not the
// node's other volumes (ground truth: the keys etcd shows modified by the
// write's revision).
func TestEtcdStatusWriteCostsWhatChanged(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			e := openEtcd(t, sharedEtcd(t), EtcdConfig{Prefix: freshPrefix(), Cache: cache})
			st := nodestatus.Status{Name: "n1", Ready: true, VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{}}
			for i := range 200 {
				st.VolumesAttached[vol(i)] = fmt.Sprintf("/dev/d%d", i)
				st.VolumesInUse[vol(i)] = true
			}
			must(t, e.PutNodeStatus(st))
			for _, change := range []struct {
				name string
				do   func()
				want int // keys of the write's revision, meta/last included
			}{
				{"one volume no longer in use", func() { st.VolumesInUse[vol(7)] = false }, 3}, // head, entry
				{"one volume detaching", func() {
					delete(st.VolumesAttached, vol(8))
					st.VolumesDetaching = map[cloud.VolumeID]bool{vol(8): true}
				}, 3},
				{"one volume gone", func() { delete(st.VolumesInUse, vol(9)); delete(st.VolumesAttached, vol(9)) }, 4}, // head, entry, index (deleted)
				{"one volume added", func() { st.VolumesAttached["new"] = "/dev/new" }, 4},                             // head, entry, index
				{"only the head", func() { st.Ready = false; st.NotReadySince = time.Unix(1, 0).UTC() }, 2},
			} {
				change.do()
				must(t, e.PutNodeStatus(st))
				if got := keysOfLastRevision(t, e); got != change.want {
					t.Fatalf("%s: the write modified %d keys, want %d", change.name, got, change.want)
				}
				got, ok, err := e.NodeStatus("n1")
				if err != nil || !ok || !reflect.DeepEqual(got, st.Clone()) {
					t.Fatalf("%s: read back %+v, %v, %v\nwant %+v", change.name, got, ok, err, st.Clone())
				}
			}
		})
	}
}

// keysOfLastRevision counts the store's keys that etcd's latest
// revision put or deleted, as etcd's watch history tells them.
func keysOfLastRevision(t *testing.T, e *Etcd) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := e.c.Get(ctx, e.k.last())
	must(t, err)
	rev := resp.Header.Revision
	w, ok := <-e.c.Watch(ctx, string(e.k), clientv3.WithPrefix(), clientv3.WithRev(rev))
	if !ok {
		t.Fatal("no watch response")
	}
	must(t, w.Err())
	n := 0
	for _, ev := range w.Events {
		if ev.Kv.ModRevision == rev { // a revision's events come in one response
			n++
		}
	}
	return n
}

// TestEtcdStatusWrittenWhole: a status written whole (its volume maps in
// the head, as before statuses were kept in pieces) reads the same, is
// found by its volumes, and the next write moves its maps into entries.
func TestEtcdStatusWrittenWhole(t *testing.T) {
	e := openEtcd(t, sharedEtcd(t), EtcdConfig{Prefix: freshPrefix(), Cache: true})
	st := nodestatus.Status{Name: "n1", Ready: true,
		VolumesAttached:  map[cloud.VolumeID]string{"a": "/dev/a", "b": "/dev/b"},
		VolumesInUse:     map[cloud.VolumeID]bool{"a": true, "c": false},
		VolumesDetaching: map[cloud.VolumeID]bool{"d": true},
	}.Clone()
	whole, err := encodeRecord(e.k.status("n1"), toStatusRecord(st))
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = e.c.Txn(ctx).Then(clientv3.OpPut(e.k.status("n1"), whole),
		clientv3.OpPut(indexEntry(e.k.volumeStatuses(), "a", "n1"), ""), clientv3.OpPut(indexEntry(e.k.volumeStatuses(), "b", "n1"), ""),
		clientv3.OpPut(indexEntry(e.k.volumeStatuses(), "d", "n1"), ""), e.putLast()).Commit()
	must(t, err)
	if got, ok, err := e.NodeStatus("n1"); err != nil || !ok || !reflect.DeepEqual(got, st) {
		t.Fatalf("whole status read back %+v, %v, %v\nwant %+v", got, ok, err, st)
	}
	delete(st.VolumesAttached, "b")
	must(t, e.PutNodeStatus(st))
	if got, _, err := e.NodeStatus("n1"); err != nil || !reflect.DeepEqual(got, st) {
		t.Fatalf("after a write: %+v, %v\nwant %+v", got, err, st)
	}
	for v, want := range map[cloud.VolumeID]int{"a": 1, "b": 0, "c": 0, "d": 1} {
		if sts, err := e.StatusesWithVolume(v); err != nil || len(sts) != want {
			t.Fatalf("statuses with %s: %d (%v), want %d", v, len(sts), err, want)
		}
	}
	kv, err := e.c.Get(ctx, e.k.status("n1"))
	must(t, err)
	head, err := decodeRecord[statusRecord](kv.Kvs[0])
	must(t, err)
	if len(head.VolumesAttached)+len(head.VolumesInUse)+len(head.VolumesDetaching) != 0 {
		t.Fatalf("the head still holds volume maps after a write: %+v", head)
	}
}
