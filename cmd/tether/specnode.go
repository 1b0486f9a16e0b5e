package main

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxAliases bounds the aliases (*name) one document may follow: enough
// for any file written by hand, too few for an alias bomb to expand.
const maxAliases = 1000

// specReader reads one document's object from its node tree strictly:
// keys exactly as documented (case included), each at most once; every
// value of the type its field has (a string is a string, a boolean true
// or false); a field given as null is left out. Its errors name the field
// by its path (volumes[0].readOnly) and say what is allowed, in the
// document's terms, never Go's.
type specReader struct{ aliases int }

// specOf reads n (YAML, or JSON made a node tree) as one object.
func specOf(n *yaml.Node) (docSpec, error) {
	r := &specReader{}
	var s docSpec
	n, err := r.deref(n)
	if err != nil {
		return s, err
	}
	if n.Kind != yaml.MappingNode {
		return s, fmt.Errorf("want an object (kind: ..., name: ...), found %s", describe(n))
	}
	err = r.fields(n, "", map[string]func(*yaml.Node, string) error{
		"kind":       r.str(&s.Kind, "Volume, Node or Workload"),
		"name":       r.str(&s.Name, "the object's name"),
		"accessMode": r.nonEmpty(&s.AccessMode, "ReadWriteOnce, ReadWriteMany or ReadOnlyMany"),
		"volumeMode": r.nonEmpty(&s.VolumeMode, "Filesystem or Block"),
		"fsType":     r.nonEmpty(&s.FsType, "a filesystem type such as ext4 or xfs"),
		"mountOptions": func(n *yaml.Node, path string) error {
			return r.list(n, path, func(i int, item *yaml.Node, path string) error {
				var o string
				if err := r.str(&o, "a mount option")(item, path); err != nil {
					return err
				}
				s.MountOptions = append(s.MountOptions, o)
				return nil
			}, func() { s.MountOptions = []string{} })
		},
		"csi": func(n *yaml.Node, path string) error {
			s.CSI = &csiSpec{}
			return r.fields(n, path, map[string]func(*yaml.Node, string) error{
				"volumeAttributes": r.strMap(&s.CSI.VolumeAttributes),
				"secretRef":        r.nonEmpty(&s.CSI.SecretRef, "the name of a secret file in <data-dir>/csi-secrets"),
			}, "volumeAttributes or secretRef")
		},
		"node": r.nonEmpty(&s.Node, "the name of a node"),
		"volumes": func(n *yaml.Node, path string) error {
			return r.list(n, path, func(i int, item *yaml.Node, path string) error {
				var v volumeSpec
				err := r.fields(item, path, map[string]func(*yaml.Node, string) error{
					"name":     r.nonEmpty(&v.Name, "the name of a volume"),
					"readOnly": r.boolean(&v.ReadOnly),
				}, "name or readOnly")
				s.Volumes = append(s.Volumes, v)
				return err
			}, func() { s.Volumes = []volumeSpec{} })
		},
	}, "kind, name, accessMode, volumeMode, fsType, mountOptions, csi, node or volumes")
	return s, err
}

// deref follows aliases, within maxAliases per document.
func (r *specReader) deref(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		if r.aliases++; r.aliases > maxAliases {
			return nil, fmt.Errorf("more than %d aliases followed in one document", maxAliases)
		}
		n = n.Alias
	}
	return n, nil
}

// join makes a field's path: csi.secretRef.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fields reads the mapping n at path, each key with its reader.
func (r *specReader) fields(n *yaml.Node, path string, read map[string]func(*yaml.Node, string) error, allowed string) error {
	n, err := r.deref(n)
	if err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("%s: want an object with %s, found %s", path, allowed, describe(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			return fmt.Errorf("%s: a key must be a field name, found %s", orTop(path), describe(k))
		}
		fn, ok := read[key]
		switch {
		case !ok:
			return fmt.Errorf("%s: unknown field %q (want %s)", orTop(path), key, allowed)
		case seen[key]:
			return fmt.Errorf("%s: field %q is given twice", orTop(path), key)
		}
		seen[key] = true
		if v, err := r.deref(v); err != nil {
			return err
		} else if v.ShortTag() == "!!null" {
			continue // null: left out
		}
		if err := fn(v, join(path, key)); err != nil {
			return err
		}
	}
	return nil
}

// orTop names the document itself when path is empty.
func orTop(path string) string {
	if path == "" {
		return "the object"
	}
	return path
}

// str reads a string.
func (r *specReader) str(p *string, allowed string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		n, err := r.deref(n)
		if err != nil {
			return err
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			hint := ""
			if n.Kind == yaml.ScalarNode {
				hint = fmt.Sprintf(" (quote it: %q)", n.Value)
			}
			return fmt.Errorf("%s: want a string (%s), found %s%s", path, allowed, describe(n), hint)
		}
		*p = n.Value
		return nil
	}
}

// nonEmpty reads a string that, when given, may not be empty.
func (r *specReader) nonEmpty(p *string, allowed string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		if err := r.str(p, allowed)(n, path); err != nil {
			return err
		}
		if *p == "" {
			return fmt.Errorf("%s: empty: want %s, or leave %s out", path, allowed, path[strings.LastIndexAny(path, ".]")+1:])
		}
		return nil
	}
}

// boolean reads true or false, nothing else (not "yes", not "true").
func (r *specReader) boolean(p *bool) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		n, err := r.deref(n)
		if err != nil {
			return err
		}
		b, perr := strconv.ParseBool(strings.ToLower(n.Value))
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || perr != nil {
			return fmt.Errorf("%s: want true or false, found %s", path, describe(n))
		}
		*p = b
		return nil
	}
}

// list reads a sequence item by item; empty is called for an empty one.
func (r *specReader) list(n *yaml.Node, path string, item func(int, *yaml.Node, string) error, empty func()) error {
	n, err := r.deref(n)
	if err != nil {
		return err
	}
	if n.Kind != yaml.SequenceNode {
		return fmt.Errorf("%s: want a list, found %s", path, describe(n))
	}
	if len(n.Content) == 0 {
		empty()
	}
	for i, c := range n.Content {
		if err := item(i, c, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return nil
}

// strMap reads an object of strings, keys exact and each once.
func (r *specReader) strMap(p *map[string]string) func(*yaml.Node, string) error {
	return func(n *yaml.Node, path string) error {
		n, err := r.deref(n)
		if err != nil {
			return err
		}
		if n.Kind != yaml.MappingNode {
			return fmt.Errorf("%s: want an object of strings, found %s", path, describe(n))
		}
		m := map[string]string{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			var k, v string
			if err := r.str(&k, "a key")(n.Content[i], path+" key"); err != nil {
				return err
			}
			if _, dup := m[k]; dup {
				return fmt.Errorf("%s: field %q is given twice", path, k)
			}
			if err := r.str(&v, "a value")(n.Content[i+1], join(path, k)); err != nil {
				return err
			}
			m[k] = v
		}
		*p = m
		return nil
	}
}

// describe names what a node holds, in the document's terms.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "an object"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!str":
		return fmt.Sprintf("the string %q", n.Value)
	case "!!int", "!!float":
		return "the number " + n.Value
	case "!!bool":
		return "the boolean " + n.Value
	case "!!null":
		return "null"
	}
	return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
}
