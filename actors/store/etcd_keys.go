package store

import (
	"fmt"
	"strconv"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/tether/tether/cloud"
)

// etcdKeys is the store's key layout under its prefix P. Records are the
// JSON of Bolt's records (bolt_record.go), keyed by their name, so a
// range of a kind is in name order (bytewise):
//
//	P meta/revision                  Revision, decimal
//	P meta/seq                       the last workload Seq, decimal
//	P meta/last                      empty; put by every write (its ModRevision: the latest)
//	P volumes/<id>                   volumeRecord
//	P nodes/<name>                   nodeRecord
//	P workloads/<uid>                workloadRecord
//	P statuses/<node>                statusRecord, its volume maps empty
//	P status-vols/<node>\x00<vol>    volEntry: vol's place in the maps
//	P intents/<volume>\x00<node>     intentRecord
//	P fences/<owner>                 empty; its ModRevision is the latest claim
//	P idx-node-workloads/<node>\x00<uid>      empty: the indexes, as
//	P idx-volume-workloads/<vol>\x00<uid>     Bolt's (bolt_index.go)
//	P idx-volume-statuses/<vol>\x00<node>
//
// Names never hold a NUL, so "<a>\x00" is exactly a's range.
type etcdKeys string

func (k etcdKeys) revision() string                { return string(k) + "meta/revision" }
func (k etcdKeys) seq() string                     { return string(k) + "meta/seq" }
func (k etcdKeys) last() string                    { return string(k) + "meta/last" }
func (k etcdKeys) volumes() string                 { return string(k) + "volumes/" }
func (k etcdKeys) nodes() string                   { return string(k) + "nodes/" }
func (k etcdKeys) workloads() string               { return string(k) + "workloads/" }
func (k etcdKeys) statuses() string                { return string(k) + "statuses/" }
func (k etcdKeys) volume(id cloud.VolumeID) string { return k.volumes() + string(id) }
func (k etcdKeys) node(n cloud.NodeName) string    { return k.nodes() + string(n) }
func (k etcdKeys) workload(uid string) string      { return k.workloads() + uid }
func (k etcdKeys) status(n cloud.NodeName) string  { return k.statuses() + string(n) }

// statusVolumes is the range of node n's status entries (etcd_status.go).
func (k etcdKeys) statusVolumes(n cloud.NodeName) string {
	return string(k) + "status-vols/" + string(n) + "\x00"
}
func (k etcdKeys) statusVolume(n cloud.NodeName, v cloud.VolumeID) string {
	return k.statusVolumes(n) + string(v)
}
func (k etcdKeys) fence(owner string) string { return string(k) + "fences/" + owner }

func (k etcdKeys) intent(vol cloud.VolumeID, n cloud.NodeName) string {
	return string(k) + "intents/" + intentKey(vol, n)
}

// Index kinds: the key of entry (a, b) is kind + a + "\x00" + b.
func (k etcdKeys) nodeWorkloads() string                    { return string(k) + "idx-node-workloads/" }
func (k etcdKeys) volumeWorkloads() string                  { return string(k) + "idx-volume-workloads/" }
func (k etcdKeys) volumeStatuses() string                   { return string(k) + "idx-volume-statuses/" }
func indexEntry(kind, a, b string) string                   { return kind + string(indexKey(a, b)) }
func indexRange(kind, a string) string                      { return kind + string(indexKey(a, "")) }
func indexSecond(kv *mvccpb.KeyValue, prefix string) string { return string(kv.Key[len(prefix):]) }

// encodeRecord is a record's value.
func encodeRecord(key string, rec any) (string, error) {
	data, err := marshalRecord(rec)
	if err != nil {
		return "", fmt.Errorf("store: encode %q: %w", key, err)
	}
	return string(data), nil
}

// decodeRecord decodes a record's value.
func decodeRecord[R any](kv *mvccpb.KeyValue) (R, error) {
	var rec R
	if err := unmarshalRecord(kv.Value, &rec); err != nil {
		return rec, fmt.Errorf("store: decode %q: %w", kv.Key, err)
	}
	return rec, nil
}

// decodeCounter reads a counter's value; a missing key is 0.
func decodeCounter(kv *mvccpb.KeyValue) (uint64, error) {
	if kv == nil {
		return 0, nil
	}
	n, err := strconv.ParseUint(string(kv.Value), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: counter %q holds %q: %w", kv.Key, kv.Value, err)
	}
	return n, nil
}

func encodeCounter(n uint64) string { return strconv.FormatUint(n, 10) }
