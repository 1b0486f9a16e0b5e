package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tether/tether/messages"
)

// maxFileBytes bounds what tether apply reads (the server bounds requests
// too).
const maxFileBytes = 1 << 20

// docSpec is one document of a file given to tether apply:
//
//	kind: Volume | Node | Workload
//	name: data-1
//	accessMode: ReadWriteOnce    # volumes: ReadWriteOnce (default), ReadWriteMany, ReadOnlyMany
//	node: n1                     # workloads
//	volumes:                     # workloads
//	  - name: data-1
//	    readOnly: false
type docSpec struct {
	Kind       string       `yaml:"kind" json:"kind"`
	Name       string       `yaml:"name" json:"name"`
	AccessMode string       `yaml:"accessMode,omitempty" json:"accessMode,omitempty"`
	Node       string       `yaml:"node,omitempty" json:"node,omitempty"`
	Volumes    []volumeSpec `yaml:"volumes,omitempty" json:"volumes,omitempty"`
}

type volumeSpec struct {
	Name     string `yaml:"name" json:"name"`
	ReadOnly bool   `yaml:"readOnly,omitempty" json:"readOnly,omitempty"`
}

// parseDocuments reads YAML (several documents separated by ---) or JSON
// (one object, an array of objects, or objects one after another). Unknown
// fields, unknown kinds, fields that do not belong to the kind, and
// duplicate names are errors naming the document; nothing is returned on
// any error.
func parseDocuments(r io.Reader) ([]*messages.Document, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxFileBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("input is larger than %d bytes", maxFileBytes)
	}
	var specs []docSpec
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		specs, err = parseJSON(trimmed)
	} else {
		specs, err = parseYAML(data)
	}
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, errors.New("no documents in input")
	}
	return toDocuments(specs)
}

func parseJSON(data []byte) ([]docSpec, error) {
	if data[0] == '[' {
		var specs []docSpec
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&specs); err != nil {
			return nil, fmt.Errorf("invalid JSON: %w", err)
		}
		return specs, nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var specs []docSpec
	for i := 1; ; i++ {
		var s docSpec
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			return specs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: invalid JSON: %w", i, err)
		}
		specs = append(specs, s)
	}
}

func parseYAML(data []byte) ([]docSpec, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var specs []docSpec
	for i := 1; ; i++ {
		var s docSpec
		err := dec.Decode(&s)
		if errors.Is(err, io.EOF) {
			return specs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: invalid YAML: %w", i, err)
		}
		if s.Kind == "" && s.Name == "" && s.AccessMode == "" && s.Node == "" && s.Volumes == nil {
			i-- // an empty document (a trailing ---, say) is no document
			continue
		}
		specs = append(specs, s)
	}
}

func toDocuments(specs []docSpec) ([]*messages.Document, error) {
	seen := map[string]int{}
	var docs []*messages.Document
	for i, s := range specs {
		d, kind, err := toDocument(s)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		key := kind + "/" + s.Name
		if j, dup := seen[key]; dup {
			return nil, fmt.Errorf("document %d: %s is also document %d: a file may name an object once", i+1, key, j)
		}
		seen[key] = i + 1
		docs = append(docs, d)
	}
	return docs, nil
}

func toDocument(s docSpec) (*messages.Document, string, error) {
	if s.Name == "" {
		return nil, "", errors.New("name is required")
	}
	switch strings.ToLower(s.Kind) {
	case "volume":
		if s.Node != "" || s.Volumes != nil {
			return nil, "", fmt.Errorf("volume %q: node and volumes are workload fields", s.Name)
		}
		return &messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: s.Name, AccessMode: s.AccessMode}}}, "volume", nil
	case "node":
		if s.Node != "" || s.Volumes != nil || s.AccessMode != "" {
			return nil, "", fmt.Errorf("node %q: only kind and name are allowed", s.Name)
		}
		return &messages.Document{Doc: &messages.Document_Node{Node: &messages.NodeDoc{Name: s.Name}}}, "node", nil
	case "workload":
		if s.AccessMode != "" {
			return nil, "", fmt.Errorf("workload %q: accessMode is a volume field", s.Name)
		}
		if s.Node == "" {
			return nil, "", fmt.Errorf("workload %q: node is required", s.Name)
		}
		w := &messages.WorkloadDoc{Name: s.Name, Node: s.Node}
		for _, v := range s.Volumes {
			w.Volumes = append(w.Volumes, &messages.WorkloadVolumeDoc{Name: v.Name, ReadOnly: v.ReadOnly})
		}
		return &messages.Document{Doc: &messages.Document_Workload{Workload: w}}, "workload", nil
	case "":
		return nil, "", errors.New("kind is required (Volume, Node or Workload)")
	}
	return nil, "", fmt.Errorf("unknown kind %q (want Volume, Node or Workload)", s.Kind)
}
