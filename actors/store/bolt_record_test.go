package store

import (
	"encoding/json"
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
		if got := r.spec(); got != tt.spec {
			t.Errorf("%s decodes as %+v, want %+v", tt.json, got, tt.spec)
		}
	}
}
