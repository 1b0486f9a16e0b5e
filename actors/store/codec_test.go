package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/cloud"
)

// records returns n seeded random records of every type, names plain
// (valid names, the fast path) unless odd, which mixes in names json must
// escape.
func records(rng *rand.Rand, n int, odd bool) []any {
	name := func() string {
		const plain = "abcxyz019-."
		const strange = "<>&\"\\\n\u00e9\u2028/ "
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			if odd && rng.IntN(6) == 0 {
				r := []rune(strange)
				b.WriteRune(r[rng.IntN(len(r))])
			} else {
				b.WriteByte(plain[rng.IntN(len(plain))])
			}
		}
		return b.String()
	}
	vols := func() []cloud.VolumeID {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return []cloud.VolumeID{}
		}
		out := make([]cloud.VolumeID, 1+rng.IntN(4))
		for i := range out {
			out[i] = cloud.VolumeID(name())
		}
		return out
	}
	boolMap := func() map[cloud.VolumeID]bool {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[cloud.VolumeID]bool{}
		}
		m := map[cloud.VolumeID]bool{}
		for range 1 + rng.IntN(12) {
			m[cloud.VolumeID(name())] = rng.IntN(2) == 0
		}
		return m
	}
	maybe := func(f func() string) string {
		if rng.IntN(2) == 0 {
			return ""
		}
		return f()
	}
	strs := func() []string {
		var out []string
		for _, v := range vols() {
			out = append(out, string(v))
		}
		if out == nil && rng.IntN(2) == 0 {
			return []string{}
		}
		return out
	}
	strMap := func() map[string]string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string]string{}
		}
		m := map[string]string{}
		for range 1 + rng.IntN(6) {
			m[name()] = maybe(name)
		}
		return m
	}
	when := func() time.Time {
		switch rng.IntN(4) {
		case 0:
			return time.Time{}
		case 1:
			return time.Unix(rng.Int64N(4e9), rng.Int64N(1e9)).UTC()
		case 2:
			return time.Unix(rng.Int64N(4e9), 0).In(time.FixedZone("", 3600*(rng.IntN(25)-12)))
		}
		return time.Date(1+rng.IntN(9998), time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), 0, 0, rng.IntN(1000)*1e6, time.UTC)
	}
	var out []any
	for range n {
		attached := map[cloud.VolumeID]string(nil)
		if rng.IntN(4) > 0 {
			attached = map[cloud.VolumeID]string{}
			for range rng.IntN(12) {
				attached[cloud.VolumeID(name())] = "/dev/" + name()
			}
		}
		out = append(out,
			statusRecord{Name: cloud.NodeName(name()), VolumesAttached: attached, VolumesInUse: boolMap(), VolumesDetaching: boolMap(),
				Ready: rng.IntN(2) == 0, NotReadySince: when(), OutOfService: rng.IntN(2) == 0, InUseSeq: rng.Uint64() >> rng.IntN(64),
				InstanceID: cloud.InstanceID(maybe(name)), MaxVolumes: int64(rng.IntN(3)) * int64(rng.IntN(1<<20))},
			workloadRecord{UID: name(), Node: cloud.NodeName(name()), Volumes: vols(), ReadOnly: vols(), Seq: rng.Uint64(), ObjectUID: name()},
			volumeRecord{ID: cloud.VolumeID(name()), Mode: rng.IntN(7) - 3, ReadOnly: rng.IntN(2) == 0, Block: rng.IntN(2) == 0,
				FsType: maybe(name), MountOptions: strs(), VolumeAttributes: strMap(), SecretRef: maybe(name), ObjectUID: name()},
			nodeRecord{Name: cloud.NodeName(name()), ObjectUID: name()},
			intentRecord{Volume: cloud.VolumeID(name()), Node: cloud.NodeName(name()), Op: rng.Uint64(), Attach: rng.IntN(2) == 0,
				Deadline: when(), Epoch: uint64(rng.IntN(3)) * rng.Uint64()},
		)
	}
	return out
}

// zeroOf returns a pointer to a new zero value of rec's type.
func zeroOf(rec any) any { return reflect.New(reflect.TypeOf(rec)).Interface() }

// TestCodecMatchesEncodingJSON: for records of plain names the hand-written
// encoder writes exactly json.Marshal's bytes, and the hand-written decoder
// alone (no fallback) reads them back as json.Unmarshal does; with names
// json must escape, marshalRecord and unmarshalRecord still agree with
// encoding/json (by falling back).
func TestCodecMatchesEncodingJSON(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 0))
	for _, odd := range []bool{false, true} {
		for i, rec := range records(rng, 300, odd) {
			want, err := json.Marshal(rec)
			if err != nil {
				t.Fatal(err)
			}
			got, err := marshalRecord(rec)
			if err != nil || string(got) != string(want) {
				t.Fatalf("seed %d, record %d (%T): marshalRecord = %s, %v; json.Marshal = %s", seed, i, rec, got, err, want)
			}
			std := zeroOf(rec)
			if err := json.Unmarshal(want, std); err != nil {
				t.Fatal(err)
			}
			fast := zeroOf(rec)
			if err := unmarshalRecord(want, fast); err != nil || !reflect.DeepEqual(fast, std) {
				t.Fatalf("seed %d, record %d: unmarshalRecord(%s) = %+v, %v; json.Unmarshal = %+v", seed, i, want, fast, err, std)
			}
			if odd {
				continue
			}
			if b, ok := encodeFast(rec); !ok || string(b) != string(want) {
				t.Fatalf("seed %d, record %d: the hand-written encoder wrote %s (ok %v), json.Marshal %s", seed, i, b, ok, want)
			}
			v := zeroOf(rec)
			if !decodeFast(want, v) {
				t.Fatalf("seed %d, record %d: the hand-written decoder did not read %s", seed, i, want)
			}
			if !reflect.DeepEqual(v, std) {
				t.Fatalf("seed %d, record %d: decoder read %s as %+v, json.Unmarshal as %+v", seed, i, want, v, std)
			}
		}
	}
}

// otherForms are encodings of records json.Unmarshal reads that are not
// the form marshalRecord writes, and some it refuses.
var otherForms = []string{
	`{"name":"n1","volumesAttached":{"v1":"/dev/a"},"volumesInUse":{"v1":true},"volumesDetaching":{},"ready":true,"notReadySince":"0001-01-01T00:00:00Z","outOfService":false,"inUseSeq":7}`,
	` {"name":"n1","volumesAttached":null,"volumesInUse":null,"volumesDetaching":null,"ready":false,"notReadySince":"2026-12-02T10:00:00.5+01:00","outOfService":true,"inUseSeq":0}`,
	`{"volumesAttached":{"v1":"/dev/a"},"name":"n1"}`,
	`{"name":"n\u00e9","extra":[1,2,{"x":null}],"inUseSeq":3}`,
	`{"name":"n1","volumesAttached":{"v\"1":"/dev/a"},"volumesInUse":{"v1":true,"v1":false},"volumesDetaching":{},"ready":true,"notReadySince":"0001-01-01T00:00:00Z","outOfService":false,"inUseSeq":7}`,
	`{"NAME":"n1","ready":null}`,
	`{"name":"n1","inUseSeq":-1}`,
	`{"name":"n1","inUseSeq":18446744073709551616}`,
	`{"name":"n1","inUseSeq":01}`,
	`{"name":"n1","notReadySince":"yesterday"}`,
	`{"name":"n1"`,
	`{"name":"n1"} x`,
	`null`,
	``,
	`{"uid":"w1","node":"n1","volumes":["v1","v2"],"readOnly":[],"seq":3,"objectUid":"u"}`,
	`{"uid":"w1","node":"n1","volumes":[ "v1" ],"readOnly":null,"seq":3,"objectUid":"u"}`,
	`{"uid":"w1","node":"n1","volumes":["v1",],"readOnly":null,"seq":3,"objectUid":"u"}`,
	`{"id":"v1","mode":-0,"objectUid":"u"}`,
	`{"id":"v1","mode":2,"readOnly":false,"objectUid":"u"}`,
	`{"id":"v1","mode":1e3,"objectUid":"u"}`,
	`{"id":"v1","mode":99999999999999999999,"objectUid":"u"}`,
	`{"id":"v1","mode":0,"block":false,"fsType":"","mountOptions":[],"volumeAttributes":{},"secretRef":"","objectUid":"u"}`,
	`{"id":"v1","mode":0,"mountOptions":null,"volumeAttributes":null,"objectUid":"u"}`,
	`{"id":"v1","mode":0,"mountOptions":["a","b",],"objectUid":"u"}`,
	`{"id":"v1","mode":0,"volumeAttributes":{"k":"1","k":"2"},"objectUid":"u"}`,
	`{"id":"v1","mode":0,"volumeAttributes":{"k":1},"objectUid":"u"}`,
	`{"id":"v1","mode":0,"volumeAttributes":{"k":"<\u0026>"},"objectUid":"u"}`,
	`{"id":"v1","mode":0,"secretRef":"s","block":true,"objectUid":"u"}`,
	`{"id":"v1","mode":0,"FSTYPE":"xfs","objectUid":"u"}`,
	`{"name":"n1","objectUid":"u"}`,
	`{"volume":"v1","node":"n1","op":4,"attach":true,"deadline":"2026-12-02T10:00:00Z"}`,
	`{"volume":"v1","node":"n1","op":4,"attach":true,"deadline":"2026-12-02T10:00:00Z","epoch":0}`,
	`{"volume":"v1","node":"n1","op":4,"attach":tru,"deadline":"2026-12-02T10:00:00Z"}`,
	`{"volume":"v1","node":"n1","op":4,"attach":true,"deadline":"2026-12-02T10:00:00\u005a"}`,
}

// sameAsEncodingJSON checks that unmarshalRecord decodes data into each
// record type as json.Unmarshal does: both fail, or both give equal
// records.
func sameAsEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	if err := differsFromEncodingJSON(data, unmarshalRecord); err != nil {
		t.Fatal(err)
	}
}

// differsFromEncodingJSON returns what tells decode from json.Unmarshal
// on data, nil if nothing does.
func differsFromEncodingJSON(data []byte, decode func([]byte, any) error) error {
	for _, zero := range []any{statusRecord{}, workloadRecord{}, volumeRecord{}, nodeRecord{}, intentRecord{}} {
		std, fast := zeroOf(zero), zeroOf(zero)
		errStd := json.Unmarshal(data, std)
		errFast := decode(data, fast)
		if (errStd == nil) != (errFast == nil) {
			return fmt.Errorf("%T from %q: error %v, json.Unmarshal's %v", zero, data, errFast, errStd)
		}
		if errStd == nil && !reflect.DeepEqual(std, fast) {
			return fmt.Errorf("%T from %q: %+v, json.Unmarshal's %+v", zero, data, fast, std)
		}
	}
	return nil
}

func TestCodecReadsOtherFormsAsEncodingJSON(t *testing.T) {
	for _, s := range otherForms {
		sameAsEncodingJSON(t, []byte(s))
	}
}

// TestCodecComparisonCatchesABrokenDecoder: the comparison the fuzz test
// makes tells a decoder that misreads one field, or accepts what
// json.Unmarshal refuses, from json.Unmarshal.
func TestCodecComparisonCatchesABrokenDecoder(t *testing.T) {
	misread := func(data []byte, rec any) error {
		err := unmarshalRecord(data, rec)
		if r, ok := rec.(*volumeRecord); ok {
			r.Mode++
		}
		return err
	}
	lenient := func(data []byte, rec any) error {
		if err := unmarshalRecord(data, rec); err != nil && len(data) > 0 && data[0] == '{' {
			return nil
		}
		return unmarshalRecord(data, rec)
	}
	for name, c := range map[string]struct {
		decode func([]byte, any) error
		data   string
	}{
		"misread": {misread, `{"id":"v1","mode":2,"objectUid":"u"}`},
		"lenient": {lenient, `{"name":"n1"`},
	} {
		if differsFromEncodingJSON([]byte(c.data), c.decode) == nil {
			t.Errorf("%s decoder on %s: not caught", name, c.data)
		}
		if err := differsFromEncodingJSON([]byte(c.data), unmarshalRecord); err != nil {
			t.Errorf("the store's decoder on %s: %v", c.data, err)
		}
	}
}

func FuzzUnmarshalRecord(f *testing.F) {
	for _, s := range otherForms {
		f.Add([]byte(s))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, rec := range records(rng, 10, false) {
		data, err := marshalRecord(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsEncodingJSON(t, data) })
}

// BenchmarkRecordCodec: a node status of 10 volumes (a node of a fleet
// of 100,000 volumes over 10,000 nodes), encoded and decoded by the
// store's codec and by encoding/json in the same run.
func BenchmarkRecordCodec(b *testing.B) {
	r := statusRecord{Name: "node-01234", VolumesAttached: map[cloud.VolumeID]string{}, VolumesInUse: map[cloud.VolumeID]bool{},
		VolumesDetaching: map[cloud.VolumeID]bool{}, Ready: true, InUseSeq: 42}
	for i := range 10 {
		v := cloud.VolumeID(fmt.Sprintf("vol-%06d", i))
		r.VolumesAttached[v] = fmt.Sprintf("/dev/xvd%c", 'b'+i)
		r.VolumesInUse[v] = true
	}
	data, err := json.Marshal(r)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode/codec", func(b *testing.B) {
		for range b.N {
			if _, err := marshalRecord(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode/encoding-json", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/codec", func(b *testing.B) {
		for range b.N {
			var out statusRecord
			if err := unmarshalRecord(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode/encoding-json", func(b *testing.B) {
		for range b.N {
			var out statusRecord
			if err := json.Unmarshal(data, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}
