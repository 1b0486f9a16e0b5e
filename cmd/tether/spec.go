package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

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
	item int // 0: the document is one object
	pos  string
}

func (s source) String() string {
	b := fmt.Sprintf("%s: document %d", s.file, s.doc)
	if s.item > 0 {
		b += fmt.Sprintf(", item %d", s.item)
	}
	if s.pos != "" {
		b += " (" + s.pos + ")"
	}
	return b
}

// entry is one object and where it was read.
type entry struct {
	spec docSpec
	at   source
}

// parseInput reads one file's content completely: JSON if it starts with {
// or [, YAML otherwise. Every document (YAML) or top-level value (JSON) is
// one object or a list of objects; nothing in the input is skipped but
// whitespace, comments and empty YAML documents. Unknown or repeated fields
// are errors naming the document. A file with no object is an error.
func parseInput(file string, data []byte) ([]entry, error) {
	var es []entry
	var err error
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		es, err = parseJSON(file, data)
	} else {
		es, err = parseYAML(file, data)
	}
	if err != nil {
		return nil, err
	}
	if len(es) == 0 {
		return nil, fmt.Errorf("%s: no documents in input", file)
	}
	return es, nil
}

// parseYAML reads a stream of documents. It decodes it twice in step: once
// into nodes, to learn each document's shape and lines, and once strictly
// (unknown fields are errors, which yaml.Node.Decode cannot check) into the
// type that shape calls for.
func parseYAML(file string, data []byte) ([]entry, error) {
	shape := yaml.NewDecoder(bytes.NewReader(data))
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	var es []entry
	for doc := 1; ; doc++ {
		at := source{file: file, doc: doc}
		var n yaml.Node
		err := shape.Decode(&n)
		if errors.Is(err, io.EOF) {
			return es, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: invalid YAML: %w", at, err)
		}
		body := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
		if len(n.Content) == 1 {
			body = n.Content[0]
		}
		at.pos = fmt.Sprintf("line %d", body.Line)
		switch {
		case body.Kind == yaml.MappingNode:
			var s docSpec
			if err := strict.Decode(&s); err != nil {
				return nil, fmt.Errorf("%s: invalid YAML: %w", at, err)
			}
			es = append(es, entry{s, at})
		case body.Kind == yaml.SequenceNode:
			var ss []docSpec
			if err := strict.Decode(&ss); err != nil {
				return nil, fmt.Errorf("%s: invalid YAML: %w", at, err)
			}
			for i, s := range ss {
				item := at
				item.item = i + 1
				if i < len(body.Content) {
					item.pos = fmt.Sprintf("line %d", body.Content[i].Line)
				}
				es = append(es, entry{s, item})
			}
		case body.ShortTag() == "!!null" && body.Value == "":
			// An empty document (a trailing ---, or only comments) holds
			// nothing; an explicit null or ~ is refused below.
			var skip yaml.Node
			if err := strict.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%s: invalid YAML: %w", at, err)
			}
		default:
			return nil, fmt.Errorf("%s: want an object (kind: ..., name: ...) or a list of objects, found %s %q", at, body.ShortTag(), body.Value)
		}
	}
}

// toDocuments converts the objects of every file given into the
// documents of one apply. It refuses only what no document can say (a
// missing or unknown kind, a field of another kind): whether the
// documents are valid (names, modes, fields, an object named twice,
// references) is the server's to say, once; sources.explain names the
// file and document of what it refuses.
func toDocuments(es []entry) ([]*messages.Document, error) {
	var docs []*messages.Document
	for _, e := range es {
		d, err := toDocument(e.spec)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", e.at, err)
		}
		docs = append(docs, d)
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
