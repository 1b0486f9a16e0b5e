package store

import (
	"maps"
	"slices"
	"strconv"

	"github.com/tether/tether/cloud"
)

// The volume record's part of the codec (codec.go): its fields after
// readOnly are each left out when unset (omitempty), as json.Marshal
// leaves them out, so a volume without them is the bytes it always was.

func (e *encoder) volume(r *volumeRecord) {
	e.b = make([]byte, 0, 64+len(r.ID)+len(r.ObjectUID)+len(r.FsType)+len(r.SecretRef)+32*(len(r.MountOptions)+len(r.VolumeAttributes)))
	e.key(`{"id":`)
	e.str(string(r.ID))
	e.key(`,"mode":`)
	e.b = strconv.AppendInt(e.b, int64(r.Mode), 10)
	if r.ReadOnly {
		e.key(`,"readOnly":true`)
	}
	if r.Block {
		e.key(`,"block":true`)
	}
	if r.FsType != "" {
		e.key(`,"fsType":`)
		e.str(r.FsType)
	}
	if len(r.MountOptions) > 0 {
		e.key(`,"mountOptions":[`)
		for i, o := range r.MountOptions {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.str(o)
		}
		e.b = append(e.b, ']')
	}
	if len(r.VolumeAttributes) > 0 {
		e.key(`,"volumeAttributes":{`)
		for i, k := range slices.Sorted(maps.Keys(r.VolumeAttributes)) {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.str(k)
			e.b = append(e.b, ':')
			e.str(r.VolumeAttributes[k])
		}
		e.b = append(e.b, '}')
	}
	if r.SecretRef != "" {
		e.key(`,"secretRef":`)
		e.str(r.SecretRef)
	}
	e.key(`,"objectUid":`)
	e.str(r.ObjectUID)
	e.b = append(e.b, '}')
}

func (d *decoder) volume() volumeRecord {
	var r volumeRecord
	d.lit(`{"id":`)
	r.ID = cloud.VolumeID(d.str())
	d.lit(`,"mode":`)
	r.Mode = d.int()
	if d.maybe(`,"readOnly":`) {
		r.ReadOnly = d.bool()
	}
	if d.maybe(`,"block":`) {
		r.Block = d.bool()
	}
	if d.maybe(`,"fsType":`) {
		r.FsType = d.str()
	}
	if d.maybe(`,"mountOptions":`) {
		r.MountOptions = d.strings()
	}
	if d.maybe(`,"volumeAttributes":`) {
		r.VolumeAttributes = d.strMap()
	}
	if d.maybe(`,"secretRef":`) {
		r.SecretRef = d.str()
	}
	d.lit(`,"objectUid":`)
	r.ObjectUID = d.str()
	d.lit("}")
	return r
}

// strings reads null (nil), [] (empty, not nil) or an array of strings,
// as json.Unmarshal reads them into a []string.
func (d *decoder) strings() []string {
	if d.null() {
		return nil
	}
	out := []string{}
	d.lit("[")
	if d.maybe("]") {
		return out
	}
	for d.ok {
		out = append(out, d.str())
		if d.maybe("]") {
			return out
		}
		d.lit(",")
	}
	return out
}

// strMap reads null (nil), {} (empty, not nil) or an object of strings,
// as json.Unmarshal reads them into a map[string]string (the last of
// repeated keys wins).
func (d *decoder) strMap() map[string]string {
	if d.null() {
		return nil
	}
	m := map[string]string{}
	d.object(func() {
		k := d.str()
		d.lit(":")
		m[k] = d.str()
	})
	return m
}
