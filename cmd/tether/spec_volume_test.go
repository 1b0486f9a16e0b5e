package main

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/tether/tether/messages"
)

// volumeOf parses in, which must hold one volume, and returns its document.
func volumeOf(t *testing.T, in string) *messages.VolumeDoc {
	t.Helper()
	es, err := parseInput("in", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := toDocuments(es)
	if err != nil || len(docs) != 1 {
		t.Fatalf("%d docs, %v", len(docs), err)
	}
	return docs[0].GetVolume()
}

// A volume's driver fields, in YAML and JSON alike, reach its document.
func TestParseVolumeDriverFields(t *testing.T) {
	yamlIn := "kind: Volume\nname: b\nvolumeMode: Block\ncsi:\n  volumeAttributes:\n    csi.tether.test/share: share-b\n    Key: \"1\"\n    key: \"2\"\n  secretRef: creds\n"
	jsonIn := `{"kind":"Volume","name":"b","volumeMode":"Block","csi":{"volumeAttributes":{"csi.tether.test/share":"share-b","Key":"1","key":"2"},"secretRef":"creds"}}`
	for name, in := range map[string]string{"yaml": yamlIn, "json": jsonIn} {
		d := volumeOf(t, in)
		want := map[string]string{"csi.tether.test/share": "share-b", "Key": "1", "key": "2"}
		if d.VolumeMode != "Block" || d.Csi.GetSecretRef() != "creds" || !maps.Equal(d.Csi.GetVolumeAttributes(), want) {
			t.Errorf("%s: %v", name, d)
		}
	}
	d := volumeOf(t, "kind: Volume\nname: f\nfsType: xfs\nmountOptions: [noatime, nodev]\n")
	if d.FsType != "xfs" || !slices.Equal(d.MountOptions, []string{"noatime", "nodev"}) || d.Csi != nil {
		t.Errorf("filesystem: %v", d)
	}
}

// What no document can say is refused before anything is sent, naming
// the file and the document: fields that are not there, or not strings,
// or given twice, and volume fields on another kind. Whether a volume's
// fields are valid is the server's to say (TestApplyValidatedByServer).
func TestParseVolumeDriverFieldsRefused(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"unknown csi field yaml", "kind: Volume\nname: v\ncsi:\n  secrets: {a: b}\n", `csi: unknown field "secrets" (want volumeAttributes or secretRef)`},
		{"unknown csi field json", `{"kind":"Volume","name":"v","csi":{"secrets":{"a":"b"}}}`, `unknown field "secrets"`},
		{"attributes not strings", `{"kind":"Volume","name":"v","csi":{"volumeAttributes":{"a":1}}}`, `in: document 1 (offset 0): csi.volumeAttributes.a: want a string (a value), found the number 1 (quote it: "1")`},
		{"repeated attribute", `{"kind":"Volume","name":"v","csi":{"volumeAttributes":{"a":"1","a":"2"}}}`, `field "a" is given twice`},
		{"repeated attribute yaml", "kind: Volume\nname: v\ncsi:\n  volumeAttributes:\n    a: \"1\"\n    a: \"2\"\n", `csi.volumeAttributes: field "a" is given twice`},
		{"repeated csi field", `{"kind":"Volume","name":"v","csi":{"secretRef":"a","secretRef":"b"}}`, `csi: field "secretRef" is given twice`},
		{"csi key in another case", `{"kind":"Volume","name":"v","csi":{"SecretRef":"b"}}`, `csi: unknown field "SecretRef"`},
		{"node with volume fields", "kind: Node\nname: n\nfsType: ext4\n", "in: document 1 (line 1): node \"n\": only kind and name are allowed"},
		{"workload with volume fields", "kind: Workload\nname: w\nnode: n1\nvolumeMode: Block\ncsi: {secretRef: x}\n", `workload "w": volumeMode, csi: volume fields`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			es, err := parseInput("in", []byte(tt.in))
			if err == nil {
				_, err = toDocuments(es)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
}

// describe volume shows what the volume hands its driver, its secrets by
// the name of their file only.
func TestDescribeVolumeDriverFields(t *testing.T) {
	res := &messages.DescribeResponse{Object: &messages.GetResponse{Volumes: []*messages.VolumeInfo{{Spec: &messages.VolumeDoc{
		Name: "b", AccessMode: "ReadWriteOnce", VolumeMode: "Filesystem", FsType: "xfs", MountOptions: []string{"noatime", "nodev"},
		Csi: &messages.VolumeCSIDoc{VolumeAttributes: map[string]string{"z": "1", "a": "2"}, SecretRef: "creds"}}}}}}
	var b bytes.Buffer
	if err := printDescribe(&b, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Volume mode:        Filesystem", "FS type:            xfs", "Mount options:      noatime,nodev",
		"Volume attributes:  a=2,z=1", "Secret ref:         creds"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("describe:\n%s\nlacks %q", b.String(), want)
		}
	}
}
