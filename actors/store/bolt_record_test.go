package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

// A volume record's readOnly is written only for ReadOnlyMany volumes:
// the records of the others are the bytes they were before it existed,
// and a record without it (an older file, or an older ReadOnlyMany
// volume, stored as multi-node then) reads as read-write.
func TestVolumeRecordReadOnly(t *testing.T) {
	for _, tt := range []struct {
		spec VolumeSpec
		json string
	}{
		{VolumeSpec{ID: "a", Mode: cloud.Exclusive, ObjectUID: "u1"}, `{"id":"a","mode":0,"objectUid":"u1"}`},
		{VolumeSpec{ID: "b", Mode: cloud.MultiNode, ObjectUID: "u2"}, `{"id":"b","mode":1,"objectUid":"u2"}`},
		{VolumeSpec{ID: "c", Mode: cloud.MultiNode, ReadOnly: true, ObjectUID: "u3"}, `{"id":"c","mode":1,"readOnly":true,"objectUid":"u3"}`},
	} {
		b, err := json.Marshal(toVolumeRecord(tt.spec))
		must(t, err)
		if string(b) != tt.json {
			t.Errorf("%s encodes as %s, want %s", tt.spec.ID, b, tt.json)
		}
		var r volumeRecord
		must(t, json.Unmarshal([]byte(tt.json), &r))
		if got := r.spec(); !reflect.DeepEqual(got, tt.spec) {
			t.Errorf("%s decodes as %+v, want %+v", tt.json, got, tt.spec)
		}
	}
}

// A volume's driver fields are written only when set, in the order
// json.Marshal writes them: a volume without them is the bytes it was
// before they existed, and one with them reads back whole, by both
// codecs. Empty options and attributes are left out and read back nil.
func TestVolumeRecordDriverFields(t *testing.T) {
	full := VolumeSpec{ID: "d", Mode: cloud.Exclusive, Block: true, FsType: "xfs", MountOptions: []string{"noatime", "nodev"},
		VolumeAttributes: map[string]string{"z": "1", "csi.tether.test/share": "share-d"}, SecretRef: "creds", ObjectUID: "u4"}
	for _, tt := range []struct {
		spec, back VolumeSpec
		json       string
	}{
		{full, full, `{"id":"d","mode":0,"block":true,"fsType":"xfs","mountOptions":["noatime","nodev"],` +
			`"volumeAttributes":{"csi.tether.test/share":"share-d","z":"1"},"secretRef":"creds","objectUid":"u4"}`},
		{VolumeSpec{ID: "e", MountOptions: []string{}, VolumeAttributes: map[string]string{}, ObjectUID: "u5"},
			VolumeSpec{ID: "e", ObjectUID: "u5"}, `{"id":"e","mode":0,"objectUid":"u5"}`},
		{VolumeSpec{ID: "f", FsType: "ext4", SecretRef: "s", ObjectUID: "u6"}, VolumeSpec{ID: "f", FsType: "ext4", SecretRef: "s", ObjectUID: "u6"},
			`{"id":"f","mode":0,"fsType":"ext4","secretRef":"s","objectUid":"u6"}`},
	} {
		rec := toVolumeRecord(tt.spec)
		std, err := json.Marshal(rec)
		must(t, err)
		fast, err := marshalRecord(rec)
		must(t, err)
		if string(std) != tt.json || string(fast) != tt.json {
			t.Errorf("%s: json.Marshal writes %s, the codec %s; want %s", tt.spec.ID, std, fast, tt.json)
		}
		if b, ok := encodeFast(rec); !ok || string(b) != tt.json {
			t.Errorf("%s: the hand-written encoder wrote %s (ok %v)", tt.spec.ID, b, ok)
		}
		var r volumeRecord
		if !decodeFast([]byte(tt.json), &r) {
			t.Fatalf("the hand-written decoder did not read %s", tt.json)
		}
		if got := r.spec(); !reflect.DeepEqual(got, tt.back) {
			t.Errorf("%s decodes as %+v, want %+v", tt.json, got, tt.back)
		}
	}
}

// Every store keeps a volume's driver fields, and shares no slice or map
// with its caller.
func TestStoresKeepDriverFields(t *testing.T) {
	forEach(t, func(t *testing.T, s testStore) {
		v := VolumeSpec{ID: "v", Block: true, MountOptions: []string{"a"}, VolumeAttributes: map[string]string{"k": "v"}, SecretRef: "s"}
		must(t, s.PutVolume(v))
		v.MountOptions[0], v.VolumeAttributes["k"] = "changed", "changed"
		got, ok, err := s.Volume("v")
		must(t, err)
		if !ok || !got.Block || got.MountOptions[0] != "a" || got.VolumeAttributes["k"] != "v" || got.SecretRef != "s" {
			t.Fatalf("stored %+v", got)
		}
		got.MountOptions[0] = "mine"
		all, err := s.Volumes()
		must(t, err)
		if len(all) != 1 || all[0].MountOptions[0] != "a" {
			t.Errorf("a read shares the stored options: %+v", all)
		}
	})
}
