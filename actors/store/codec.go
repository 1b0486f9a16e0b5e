package store

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/tether/tether/cloud"
)

// The records' codec. The files hold JSON (bolt_record.go), and
// encoding/json's reflection was the largest part of the store's own CPU in
// a fleet's start: every node-status write decodes the status it replaces
// and encodes the new one inside the write transaction.
//
// marshalRecord writes, for the record types, exactly the bytes
// json.Marshal writes (its field order, sorted map keys, null for a nil map
// or slice, RFC 3339 times), by hand; unmarshalRecord reads that form by
// hand. Anything else is left to encoding/json: a string that needs an
// escape (names never do: they are validated), whitespace, other field
// orders, unknown fields, a file edited by hand. So the files do not
// change, an older tether reads them, and every reader decodes what
// json.Unmarshal decodes (codec_test.go compares them, fuzzed).

// marshalRecord encodes rec as json.Marshal does.
func marshalRecord(rec any) ([]byte, error) {
	if data, ok := encodeFast(rec); ok {
		return data, nil
	}
	return json.Marshal(rec)
}

// unmarshalRecord decodes data into rec (a pointer) as json.Unmarshal
// does into a zero record.
func unmarshalRecord(data []byte, rec any) error {
	if decodeFast(data, rec) {
		return nil
	}
	return json.Unmarshal(data, rec)
}

// encodeFast encodes a record by hand; false: rec is of another type, or
// json.Marshal would write it otherwise.
func encodeFast(rec any) ([]byte, bool) {
	e := encoder{ok: true}
	switch r := rec.(type) {
	case statusRecord:
		e.status(&r)
	case workloadRecord:
		e.workload(&r)
	case volumeRecord:
		e.volume(&r)
	case nodeRecord:
		e.node(&r)
	case intentRecord:
		e.intent(&r)
	default:
		return nil, false
	}
	return e.b, e.ok
}

// decodeFast decodes data into rec (a pointer to a record) by hand if it
// is in the form encodeFast writes, and reports whether it was; rec is
// left alone when not.
func decodeFast(data []byte, rec any) bool {
	d := decoder{b: data, ok: true}
	switch r := rec.(type) {
	case *statusRecord:
		return set(r, d.status(), d.end())
	case *workloadRecord:
		return set(r, d.workload(), d.end())
	case *volumeRecord:
		return set(r, d.volume(), d.end())
	case *nodeRecord:
		return set(r, d.node(), d.end())
	case *intentRecord:
		return set(r, d.intent(), d.end())
	}
	return false
}

// set stores v in *r if ok.
func set[R any](r *R, v R, ok bool) bool {
	if ok {
		*r = v
	}
	return ok
}

// encoder appends JSON to b; ok turns false at the first value it cannot
// write as json.Marshal would, and the caller falls back to it.
type encoder struct {
	b  []byte
	ok bool
}

func (e *encoder) status(r *statusRecord) {
	e.b = make([]byte, 0, 160+40*(len(r.VolumesAttached)+len(r.VolumesInUse)+len(r.VolumesDetaching)))
	e.key(`{"name":`)
	e.str(string(r.Name))
	e.key(`,"volumesAttached":`)
	if r.VolumesAttached == nil {
		e.key("null")
	} else {
		e.b = append(e.b, '{')
		for i, k := range sortedMapKeys(r.VolumesAttached) {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.str(string(k))
			e.b = append(e.b, ':')
			e.str(r.VolumesAttached[k])
		}
		e.b = append(e.b, '}')
	}
	e.key(`,"volumesInUse":`)
	e.boolMap(r.VolumesInUse)
	e.key(`,"volumesDetaching":`)
	e.boolMap(r.VolumesDetaching)
	e.key(`,"ready":`)
	e.bool(r.Ready)
	e.key(`,"notReadySince":`)
	e.time(r.NotReadySince)
	e.key(`,"outOfService":`)
	e.bool(r.OutOfService)
	e.key(`,"inUseSeq":`)
	e.b = strconv.AppendUint(e.b, r.InUseSeq, 10)
	if r.InstanceID != "" {
		e.key(`,"instanceId":`)
		e.str(string(r.InstanceID))
	}
	if r.MaxVolumes != 0 {
		e.key(`,"maxVolumes":`)
		e.b = strconv.AppendInt(e.b, r.MaxVolumes, 10)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) workload(r *workloadRecord) {
	e.b = make([]byte, 0, 96+len(r.UID)+len(r.Node)+len(r.ObjectUID)+16*(len(r.Volumes)+len(r.ReadOnly)))
	e.key(`{"uid":`)
	e.str(r.UID)
	e.key(`,"node":`)
	e.str(string(r.Node))
	e.key(`,"volumes":`)
	e.strSlice(r.Volumes)
	e.key(`,"readOnly":`)
	e.strSlice(r.ReadOnly)
	e.key(`,"seq":`)
	e.b = strconv.AppendUint(e.b, r.Seq, 10)
	e.key(`,"objectUid":`)
	e.str(r.ObjectUID)
	e.b = append(e.b, '}')
}

func (e *encoder) node(r *nodeRecord) {
	e.b = make([]byte, 0, 32+len(r.Name)+len(r.ObjectUID))
	e.key(`{"name":`)
	e.str(string(r.Name))
	e.key(`,"objectUid":`)
	e.str(r.ObjectUID)
	e.b = append(e.b, '}')
}

func (e *encoder) intent(r *intentRecord) {
	e.b = make([]byte, 0, 128+len(r.Volume)+len(r.Node))
	e.key(`{"volume":`)
	e.str(string(r.Volume))
	e.key(`,"node":`)
	e.str(string(r.Node))
	e.key(`,"op":`)
	e.b = strconv.AppendUint(e.b, r.Op, 10)
	e.key(`,"attach":`)
	e.bool(r.Attach)
	e.key(`,"deadline":`)
	e.time(r.Deadline)
	if r.Epoch != 0 {
		e.key(`,"epoch":`)
		e.b = strconv.AppendUint(e.b, r.Epoch, 10)
	}
	e.b = append(e.b, '}')
}

func (e *encoder) key(s string) { e.b = append(e.b, s...) }

// str writes s quoted when it needs no escape in json.Marshal's output:
// no control character, quote, backslash, HTML character (<, >, &) and no
// byte beyond ASCII (invalid UTF-8 and U+2028/U+2029 would be escaped).
func (e *encoder) str(s string) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			e.ok = false
			return
		}
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, s...)
	e.b = append(e.b, '"')
}

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, "true"...)
	} else {
		e.b = append(e.b, "false"...)
	}
}

// zeroTime is json.Marshal's form of time.Time{}.
const zeroTime = `"0001-01-01T00:00:00Z"`

func (e *encoder) time(t time.Time) {
	if t == (time.Time{}) {
		e.key(zeroTime)
		return
	}
	data, err := t.MarshalJSON()
	if err != nil {
		e.ok = false
		return
	}
	e.b = append(e.b, data...)
}

func (e *encoder) boolMap(m map[cloud.VolumeID]bool) {
	if m == nil {
		e.key("null")
		return
	}
	e.b = append(e.b, '{')
	for i, k := range sortedMapKeys(m) {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(string(k))
		e.b = append(e.b, ':')
		e.bool(m[k])
	}
	e.b = append(e.b, '}')
}

func (e *encoder) strSlice(s []cloud.VolumeID) {
	if s == nil {
		e.key("null")
		return
	}
	e.b = append(e.b, '[')
	for i, v := range s {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.str(string(v))
	}
	e.b = append(e.b, ']')
}

// sortedMapKeys returns m's keys in byte order, json.Marshal's order, in
// one allocation (slices.Sorted(maps.Keys(m)) grows its slice: 21
// allocations instead of 4 for a 10-volume status, and most of the gain).
func sortedMapKeys[V any](m map[cloud.VolumeID]V) []cloud.VolumeID {
	keys := make([]cloud.VolumeID, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// decoder reads the form encoder writes from b at i; ok turns false at the
// first byte that is not that form, and the caller falls back to
// json.Unmarshal.
type decoder struct {
	b  []byte
	i  int
	ok bool
}

// end reports whether every byte was read as the form encoder writes.
func (d *decoder) end() bool { return d.ok && d.i == len(d.b) }

func (d *decoder) status() statusRecord {
	var r statusRecord
	d.lit(`{"name":`)
	r.Name = cloud.NodeName(d.str())
	d.lit(`,"volumesAttached":`)
	if !d.null() {
		r.VolumesAttached = map[cloud.VolumeID]string{}
		d.object(func() {
			k := d.str()
			d.lit(":")
			r.VolumesAttached[cloud.VolumeID(k)] = d.str()
		})
	}
	d.lit(`,"volumesInUse":`)
	r.VolumesInUse = d.boolMap()
	d.lit(`,"volumesDetaching":`)
	r.VolumesDetaching = d.boolMap()
	d.lit(`,"ready":`)
	r.Ready = d.bool()
	d.lit(`,"notReadySince":`)
	r.NotReadySince = d.time()
	d.lit(`,"outOfService":`)
	r.OutOfService = d.bool()
	d.lit(`,"inUseSeq":`)
	r.InUseSeq = d.uint()
	if d.maybe(`,"instanceId":`) {
		r.InstanceID = cloud.InstanceID(d.str())
	}
	if d.maybe(`,"maxVolumes":`) {
		r.MaxVolumes = int64(d.int())
	}
	d.lit("}")
	return r
}

func (d *decoder) workload() workloadRecord {
	var r workloadRecord
	d.lit(`{"uid":`)
	r.UID = d.str()
	d.lit(`,"node":`)
	r.Node = cloud.NodeName(d.str())
	d.lit(`,"volumes":`)
	r.Volumes = d.strSlice()
	d.lit(`,"readOnly":`)
	r.ReadOnly = d.strSlice()
	d.lit(`,"seq":`)
	r.Seq = d.uint()
	d.lit(`,"objectUid":`)
	r.ObjectUID = d.str()
	d.lit("}")
	return r
}

func (d *decoder) node() nodeRecord {
	var r nodeRecord
	d.lit(`{"name":`)
	r.Name = cloud.NodeName(d.str())
	d.lit(`,"objectUid":`)
	r.ObjectUID = d.str()
	d.lit("}")
	return r
}

func (d *decoder) intent() intentRecord {
	var r intentRecord
	d.lit(`{"volume":`)
	r.Volume = cloud.VolumeID(d.str())
	d.lit(`,"node":`)
	r.Node = cloud.NodeName(d.str())
	d.lit(`,"op":`)
	r.Op = d.uint()
	d.lit(`,"attach":`)
	r.Attach = d.bool()
	d.lit(`,"deadline":`)
	r.Deadline = d.time()
	if d.maybe(`,"epoch":`) {
		r.Epoch = d.uint()
	}
	d.lit("}")
	return r
}

// lit reads s.
func (d *decoder) lit(s string) {
	if !d.maybe(s) {
		d.ok = false
	}
}

// maybe reads s if it comes next.
func (d *decoder) maybe(s string) bool {
	if d.ok && len(d.b)-d.i >= len(s) && string(d.b[d.i:d.i+len(s)]) == s {
		d.i += len(s)
		return true
	}
	return false
}

// null reads null if it comes next.
func (d *decoder) null() bool { return d.maybe("null") }

// str reads a string without escapes, of ASCII only (what encoder.str
// writes).
func (d *decoder) str() string {
	if !d.maybe(`"`) {
		d.ok = false
		return ""
	}
	start := d.i
	for ; d.i < len(d.b); d.i++ {
		switch c := d.b[d.i]; {
		case c == '"':
			s := string(d.b[start:d.i])
			d.i++
			return s
		case c < 0x20 || c >= 0x80 || c == '\\':
			d.ok = false
			return ""
		}
	}
	d.ok = false
	return ""
}

func (d *decoder) bool() bool {
	switch {
	case d.maybe("true"):
		return true
	case d.maybe("false"):
		return false
	}
	d.ok = false
	return false
}

// digits reads an unsigned integer as JSON writes it: 0, or no leading
// zero.
func (d *decoder) digits() []byte {
	if !d.ok {
		return nil
	}
	start := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	n := d.b[start:d.i]
	if len(n) == 0 || (n[0] == '0' && len(n) > 1) {
		d.ok = false
	}
	return n
}

func (d *decoder) uint() uint64 {
	n := d.digits()
	if !d.ok {
		return 0
	}
	v, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil {
		d.ok = false
	}
	return v
}

func (d *decoder) int() int {
	neg := d.maybe("-")
	n := d.digits()
	if !d.ok {
		return 0
	}
	s := string(n)
	if neg {
		s = "-" + s
	}
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		d.ok = false
	}
	return int(v)
}

// time reads a quoted time as time.Time's UnmarshalJSON does.
func (d *decoder) time() time.Time {
	var t time.Time
	if d.maybe(zeroTime) {
		return t
	}
	if !d.ok || d.i >= len(d.b) || d.b[d.i] != '"' {
		d.ok = false
		return t
	}
	end := bytes.IndexByte(d.b[d.i+1:], '"')
	if end < 0 {
		d.ok = false
		return t
	}
	quoted := d.b[d.i : d.i+end+2]
	if bytes.IndexByte(quoted[1:len(quoted)-1], '\\') >= 0 || t.UnmarshalJSON(quoted) != nil {
		d.ok = false
		return t
	}
	d.i += len(quoted)
	return t
}

// object reads {} or {member,member...}, each member read by member.
func (d *decoder) object(member func()) {
	d.lit("{")
	if d.maybe("}") {
		return
	}
	for d.ok {
		member()
		if d.maybe("}") {
			return
		}
		d.lit(",")
	}
}

func (d *decoder) boolMap() map[cloud.VolumeID]bool {
	if d.null() {
		return nil
	}
	m := map[cloud.VolumeID]bool{}
	d.object(func() {
		k := d.str()
		d.lit(":")
		m[cloud.VolumeID(k)] = d.bool()
	})
	return m
}

func (d *decoder) strSlice() []cloud.VolumeID {
	if d.null() {
		return nil
	}
	out := []cloud.VolumeID{}
	d.lit("[")
	if d.maybe("]") {
		return out
	}
	for d.ok {
		out = append(out, cloud.VolumeID(d.str()))
		if d.maybe("]") {
			return out
		}
		d.lit(",")
	}
	return out
}
