package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tether/tether/bootstrap/operator/api"
	"github.com/tether/tether/messages"
)

// docSpec is one object of a file given to tether apply:
//
//	kind: Volume | Node | Workload
//	name: data-1
//	accessMode: ReadWriteOnce    # volumes: ReadWriteOnce (default), ReadWriteMany, ReadOnlyMany
//	volumeMode: Filesystem       # volumes, CSI only: Filesystem (default) or Block (a raw device file)
//	fsType: xfs                  # volumes, CSI, Filesystem only: [a-z0-9]+ (default ext4)
//	mountOptions: [noatime]      # volumes, CSI, Filesystem only: one option per item (no commas)
//	csi:                         # volumes, CSI only
//	  volumeAttributes:          #   the volume_context CreateVolume returned
//	    key: value
//	  secretRef: db-creds        #   <data-dir>/csi-secrets/db-creds.json, mode 0600
//	node: n1                     # workloads
//	volumes:                     # workloads
//	  - name: data-1
//	    readOnly: false
//
// The volume fields from volumeMode on are fixed when the volume is
// created, like accessMode.
type docSpec struct {
	Kind         string       `yaml:"kind" json:"kind"`
	Name         string       `yaml:"name" json:"name"`
	AccessMode   string       `yaml:"accessMode,omitempty" json:"accessMode,omitempty"`
	VolumeMode   string       `yaml:"volumeMode,omitempty" json:"volumeMode,omitempty"`
	FsType       string       `yaml:"fsType,omitempty" json:"fsType,omitempty"`
	MountOptions []string     `yaml:"mountOptions,omitempty" json:"mountOptions,omitempty"`
	CSI          *csiSpec     `yaml:"csi,omitempty" json:"csi,omitempty"`
	Node         string       `yaml:"node,omitempty" json:"node,omitempty"`
	Volumes      []volumeSpec `yaml:"volumes,omitempty" json:"volumes,omitempty"`
}

// csiSpec is a volume's csi field: what its CSI driver gave or needs.
type csiSpec struct {
	VolumeAttributes map[string]string `yaml:"volumeAttributes,omitempty" json:"volumeAttributes,omitempty"`
	SecretRef        string            `yaml:"secretRef,omitempty" json:"secretRef,omitempty"`
}

// volumeFields names the volume fields s sets, for the refusal of a node
// or workload that sets them.
func (s docSpec) volumeFields() []string {
	var out []string
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"accessMode", s.AccessMode != ""}, {"volumeMode", s.VolumeMode != ""}, {"fsType", s.FsType != ""},
		{"mountOptions", s.MountOptions != nil}, {"csi", s.CSI != nil},
	} {
		if f.set {
			out = append(out, f.name)
		}
	}
	return out
}

// volumeDoc is s's volume document, as written: the server checks its
// fields (an apply is validated once, where it must be: see sources).
func (s docSpec) volumeDoc() *messages.VolumeDoc {
	d := &messages.VolumeDoc{Name: s.Name, AccessMode: s.AccessMode, VolumeMode: s.VolumeMode, FsType: s.FsType, MountOptions: s.MountOptions}
	if s.CSI != nil {
		d.Csi = &messages.VolumeCSIDoc{VolumeAttributes: s.CSI.VolumeAttributes, SecretRef: s.CSI.SecretRef}
	}
	return d
}

type volumeSpec struct {
	Name     string `yaml:"name" json:"name"`
	ReadOnly bool   `yaml:"readOnly,omitempty" json:"readOnly,omitempty"`
}

// source says where an object was read, for errors: the file as given to
// -f ("stdin" for -), the document counted from 1 (YAML: between ---
// markers, empty ones included; JSON: top-level values), the item when the
// document is a list, and the line (YAML) or byte offset from 0 (JSON).
type source struct {
	file string
	doc  int
	item int    // 0: the document is one object
	unit string // of pos: "line", "offset", or "" (not known)
	pos  int
}

func (s source) String() string {
	b := fmt.Sprintf("%s: document %d", s.file, s.doc)
	if s.item > 0 {
		b += fmt.Sprintf(", item %d", s.item)
	}
	if s.unit != "" {
		b += fmt.Sprintf(" (%s %d)", s.unit, s.pos)
	}
	return b
}

// entry is one object and where it was read.
type entry struct {
	spec docSpec
	at   source
}

// maxYAMLDocument bounds one YAML document's text: a YAML document is
// decoded whole (a JSON array is read item by item), so a longer list is
// to be split into documents (---).
const maxYAMLDocument = 8 << 20

// decodeInput reads one input as a stream, calling fn with each object in
// order: JSON if it starts with { or [, YAML otherwise. Every document
// (YAML) or top-level value (JSON) is one object or a list of objects;
// nothing in the input is skipped but whitespace, comments and empty YAML
// documents. Objects are read strictly (specOf). It holds one YAML
// document, or one JSON object, at a time.
func decodeInput(file string, r io.Reader, fn func(entry) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	if isJSON(br) {
		return decodeJSON(file, br, fn)
	}
	return decodeYAML(file, br, fn)
}

// isJSON peeks at the first byte that is not whitespace (within the
// reader's buffer).
func isJSON(br *bufio.Reader) bool {
	for n := 1; n <= br.Size(); n *= 2 {
		b, err := br.Peek(n)
		t := bytes.TrimLeft(b, " \t\r\n")
		if len(t) > 0 {
			return t[0] == '{' || t[0] == '['
		}
		if err != nil {
			return false
		}
	}
	return false
}

// parseInput reads one file's content completely (decodeInput); a file
// with no object is an error.
func parseInput(file string, data []byte) ([]entry, error) {
	var es []entry
	err := decodeInput(file, bytes.NewReader(data), func(e entry) error {
		es = append(es, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%s: no documents in input", file)
	}
	return es, nil
}

// docReader bounds what the YAML decoder reads for one document.
type docReader struct {
	r        io.Reader
	left     int
	exceeded bool
}

func (d *docReader) Read(p []byte) (int, error) {
	if d.left <= 0 {
		d.exceeded = true
		return 0, errors.New("document too large")
	}
	n, err := d.r.Read(p[:min(len(p), d.left)])
	d.left -= n
	return n, err
}

// decodeYAML reads a stream of YAML documents one at a time.
func decodeYAML(file string, r io.Reader, fn func(entry) error) error {
	dr := &docReader{r: r}
	dec := yaml.NewDecoder(dr)
	for doc := 1; ; doc++ {
		at := source{file: file, doc: doc}
		dr.left = maxYAMLDocument
		var n yaml.Node
		err := dec.Decode(&n)
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case dr.exceeded:
			return fmt.Errorf("%s: a YAML document larger than %d bytes: split it into documents (---)", at, maxYAMLDocument)
		case err != nil:
			return fmt.Errorf("%s: invalid YAML: %w", at, err)
		}
		body := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		if len(n.Content) == 1 {
			body = n.Content[0]
		}
		at.unit, at.pos = "line", body.Line
		switch {
		case body.Kind == yaml.MappingNode || body.Kind == yaml.AliasNode:
			if err := yamlObject(body, at, fn); err != nil {
				return err
			}
		case body.Kind == yaml.SequenceNode:
			for i, c := range body.Content {
				item := at
				item.item, item.unit, item.pos = i+1, "line", c.Line
				if err := yamlObject(c, item, fn); err != nil {
					return err
				}
			}
		case body.ShortTag() == "!!null" && body.Value == "":
			// An empty document (a trailing ---, or only comments) holds
			// nothing; an explicit null or ~ is refused below.
		default:
			return fmt.Errorf("%s: want an object (kind: ..., name: ...) or a list of objects, found %s %q", at, body.ShortTag(), body.Value)
		}
	}
}

// yamlObject reads one object and passes it to fn.
func yamlObject(n *yaml.Node, at source, fn func(entry) error) error {
	s, err := specOf(n)
	if err != nil {
		return fmt.Errorf("%s: %w", at, err)
	}
	return fn(entry{s, at})
}

// toDocuments converts the objects of every file given into the
// documents of one apply, as an apply does (input.add). It refuses only
// what no document can say (a missing or unknown kind, a field of another
// kind): whether the documents are valid (names, modes, fields, an object
// named twice, references) is the server's to say, once; sources.explain
// names the file and document of what it refuses.
func toDocuments(es []entry) ([]*messages.Document, error) {
	in := &input{max: api.MaxApplyDocuments}
	for _, e := range es {
		if err := in.add(e); err != nil {
			return nil, err
		}
	}
	docs := make([]*messages.Document, in.batch.Len())
	for i := range docs {
		d, err := in.batch.Document(i)
		if err != nil {
			return nil, err
		}
		docs[i] = d
	}
	return docs, nil
}

func toDocument(s docSpec) (*messages.Document, error) {
	switch strings.ToLower(s.Kind) {
	case "volume":
		if s.Node != "" || s.Volumes != nil {
			return nil, fmt.Errorf("volume %q: node and volumes are workload fields", s.Name)
		}
		return &messages.Document{Doc: &messages.Document_Volume{Volume: s.volumeDoc()}}, nil
	case "node":
		if s.Node != "" || s.Volumes != nil || len(s.volumeFields()) > 0 {
			return nil, fmt.Errorf("node %q: only kind and name are allowed", s.Name)
		}
		return &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: s.Name}}}, nil
	case "workload":
		if f := s.volumeFields(); len(f) > 0 {
			return nil, fmt.Errorf("workload %q: %s: volume fields", s.Name, strings.Join(f, ", "))
		}
		w := &messages.WorkloadDoc{Name: s.Name, Node: s.Node}
		for _, v := range s.Volumes {
			w.Volumes = append(w.Volumes, &messages.WorkloadVolumeDoc{Name: v.Name, ReadOnly: v.ReadOnly})
		}
		return &messages.Document{Doc: &messages.Document_Workload{Workload: w}}, nil
	case "":
		return nil, errors.New("kind is required (Volume, Node or Workload)")
	}
	return nil, fmt.Errorf("unknown kind %q (want Volume, Node or Workload)", s.Kind)
}

// documentKey returns a document's kind/name.
func documentKey(d *messages.Document) string {
	switch {
	case d.GetVolume() != nil:
		return "volume/" + d.GetVolume().GetName()
	case d.GetNode() != nil:
		return "node/" + d.GetNode().GetName()
	case d.GetWorkload() != nil:
		return "workload/" + d.GetWorkload().GetName()
	}
	return ""
}
