package sim

// The log (StatePath + ".log") holds the changes made since the snapshot
// of its generation. It is a sequence of frames:
//
//	length  uint32, little endian: the payload's length in bytes (> 0)
//	crc     uint32, little endian: CRC-32C (Castagnoli) of the payload
//	payload JSON
//
// The first frame is the header, {"log":1,"generation":N}; every other
// frame is one group commit: a JSON array of the records (logRecord) of
// the changes it made durable, in the order they were made. A group is
// written with one write and one fsync, so a crash mid-append loses the
// whole group, never a part of it, and none of its calls had returned.
//
// Loading stops at the first frame that does not check: if it is the last
// thing in the file (its length runs past the end, or it ends exactly at
// the end, or everything from it on is zeros, as a file extended but not
// yet written is), it is the torn tail of a killed append and is ignored;
// anything else is corruption, an error naming the file and the offset.

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"

	"github.com/tether/tether/cloud"
)

// logVersion is the version of the log format.
const logVersion = 1

// frameHead is the size of a frame's length and checksum.
const frameHead = 8

// maxFrame bounds a frame's payload: a larger length is not one we wrote.
const maxFrame = 1 << 30

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logHeader is the payload of a log's first frame.
type logHeader struct {
	Log        int    `json:"log"`
	Generation uint64 `json:"generation"`
}

// logRecord is one change: the new values of what it changed. Seq, Tag and
// Counters are always the values after the change; volumes and instances
// are listed when created or changed (put) or deleted.
type logRecord struct {
	Seq              int                `json:"seq"`
	Tag              string             `json:"tag,omitempty"`
	Volumes          []stateVolume      `json:"volumes,omitempty"`
	DeletedVolumes   []cloud.VolumeID   `json:"deleted_volumes,omitempty"`
	Instances        []stateInstance    `json:"instances,omitempty"`
	DeletedInstances []cloud.InstanceID `json:"deleted_instances,omitempty"`
	Counters         stateCounters      `json:"counters"`
}

// appendFrame appends the frame of payload to buf.
func appendFrame(buf, payload []byte) []byte {
	buf = binary.LittleEndian.AppendUint32(buf, uint32(len(payload)))
	buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
	return append(buf, payload...)
}

// groupFrame returns the frame of a group whose records are encoded in recs.
func groupFrame(recs [][]byte) []byte {
	n := 2
	for _, r := range recs {
		n += len(r) + 1
	}
	payload := make([]byte, 0, n)
	payload = append(payload, '[')
	for i, r := range recs {
		if i > 0 {
			payload = append(payload, ',')
		}
		payload = append(payload, r...)
	}
	payload = append(payload, ']')
	return appendFrame(make([]byte, 0, frameHead+len(payload)), payload)
}

// headerFrame returns the first frame of the log of generation gen.
func headerFrame(gen uint64) []byte {
	payload, _ := json.Marshal(logHeader{Log: logVersion, Generation: gen}) // cannot fail
	return appendFrame(nil, payload)
}

// logContent is what a log file holds.
type logContent struct {
	gen    uint64
	groups [][]logRecord // the groups, in order
	end    int64         // offset just after the last good frame
	torn   bool          // a torn tail follows end
}

// readLog reads the log at path; ok is false if there is none.
func readLog(path string) (lc logContent, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return lc, false, nil
	}
	if err != nil {
		return lc, false, fmt.Errorf("sim: read state log: %w", err)
	}
	lc, err = parseLog(data)
	if err != nil {
		return lc, false, fmt.Errorf("sim: state log %s: %w", path, err)
	}
	return lc, true, nil
}

// parseLog parses the content of a log file.
func parseLog(data []byte) (logContent, error) {
	var lc logContent
	payload, next, err := nextFrame(data, 0)
	if err != nil {
		return lc, fmt.Errorf("offset 0: not a state log: header %w", err)
	}
	var h logHeader
	if err := json.Unmarshal(payload, &h); err != nil || h.Log != logVersion || h.Generation == 0 {
		return lc, fmt.Errorf("offset 0: not a state log of version %d: header %q", logVersion, payload)
	}
	lc.gen, lc.end = h.Generation, int64(next)
	for off := next; off < len(data); off = next {
		payload, next, err = nextFrame(data, off)
		if err != nil {
			if tornTail(data, off) {
				lc.torn = true
				return lc, nil
			}
			return lc, fmt.Errorf("offset %d: corrupt record: %w", off, err)
		}
		var group []logRecord
		dec := json.NewDecoder(bytes.NewReader(payload))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&group); err != nil || dec.More() {
			return lc, fmt.Errorf("offset %d: corrupt record: checksum good, content not a group of changes: %v", off, err)
		}
		lc.groups = append(lc.groups, group)
		lc.end = int64(next)
	}
	return lc, nil
}

// errFrameShort is a frame that runs past the end of the file.
var errFrameShort = errors.New("runs past the end of the file")

// nextFrame returns the payload of the frame at off and the offset of the
// next one.
func nextFrame(data []byte, off int) (payload []byte, next int, err error) {
	if len(data)-off < frameHead {
		return nil, 0, errFrameShort
	}
	n := binary.LittleEndian.Uint32(data[off:])
	sum := binary.LittleEndian.Uint32(data[off+4:])
	switch {
	case n == 0 || n > maxFrame:
		return nil, 0, fmt.Errorf("length %d", n)
	case int64(len(data)-off-frameHead) < int64(n):
		return nil, 0, errFrameShort
	}
	payload = data[off+frameHead : off+frameHead+int(n)]
	if crc32.Checksum(payload, castagnoli) != sum {
		return nil, 0, errors.New("checksum mismatch")
	}
	return payload, off + frameHead + int(n), nil
}

// tornTail reports whether the bad frame at off can be the torn tail of
// the last append: nothing good can follow it.
func tornTail(data []byte, off int) bool {
	if len(data)-off < frameHead {
		return true
	}
	n := int64(binary.LittleEndian.Uint32(data[off:]))
	if int64(len(data)-off-frameHead) <= n { // runs to or past the end
		return true
	}
	return len(bytes.TrimLeft(data[off:], "\x00")) == 0
}

// image is the world as the files hold it: the snapshot with the log's
// records applied. The store keeps the image of what is durable, so that a
// failed write can put memory back and a compaction can write a snapshot
// without the Cloud's lock.
type image struct {
	seq      int
	tag      string
	vols     map[cloud.VolumeID]stateVolume
	insts    map[cloud.InstanceID]stateInstance
	counters stateCounters
}

func imageOf(st *state) *image {
	im := &image{seq: st.Seq, tag: st.Tag, counters: st.Counters,
		vols:  make(map[cloud.VolumeID]stateVolume, len(st.Volumes)),
		insts: make(map[cloud.InstanceID]stateInstance, len(st.Instances))}
	for _, v := range st.Volumes {
		im.vols[v.ID] = v
	}
	for _, in := range st.Instances {
		im.insts[in.ID] = in
	}
	return im
}

// apply applies r; r's maps become the image's.
func (im *image) apply(r *logRecord) {
	im.seq, im.tag, im.counters = r.Seq, r.Tag, r.Counters
	for _, v := range r.Volumes {
		im.vols[v.ID] = v
	}
	for _, id := range r.DeletedInstances {
		delete(im.insts, id)
	}
	for _, in := range r.Instances {
		im.insts[in.ID] = in
	}
	for _, id := range r.DeletedVolumes {
		delete(im.vols, id)
	}
}

// state returns the snapshot of im for generation gen, sorted; it shares
// the devices maps of im, which are never modified.
func (im *image) state(gen uint64) *state {
	st := &state{Version: stateVersion, Generation: gen, Seq: im.seq, Tag: im.tag, Counters: im.counters,
		Instances: make([]stateInstance, 0, len(im.insts)),
		Volumes:   make([]stateVolume, 0, len(im.vols))}
	for _, id := range sortedKeys(im.insts) {
		st.Instances = append(st.Instances, im.insts[id])
	}
	for _, id := range sortedKeys(im.vols) {
		st.Volumes = append(st.Volumes, im.vols[id])
	}
	return st
}
