package process

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tether/tether/actors/controller"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/cloud/csi/csitest"
	"github.com/tether/tether/messages"
)

// (c) A driver that demands secrets with every call that takes them:
// a volume whose csi.secretRef names a file of mode 0600 under the data
// directory reaches its workload, published, staged and unpublished with
// them. Opened to 0644, the file is refused, naming it and its mode: an
// apply is refused, an attach fails with an event (nothing sent), a
// detach is sent without them and refused by the driver, saying why;
// closed again, everything goes on. The secret shows nowhere: no event,
// no log line, no get -o json.
func TestCSISecretsByReference(t *testing.T) {
	secrets := map[string]string{"password": secretValue}
	r := newCSIVolumeRig(t, csitest.Config{List: true, ListPublished: true, StageUnstage: true, RequireSecrets: secrets})
	path := writeSecrets(t, r.cfg.DataDir, "creds", `{"password":"`+secretValue+`"}`, 0o600)
	for _, v := range []string{"v1", "v2"} {
		r.d.AddVolume(v)
	}
	if err := r.applySpecs([]store.VolumeSpec{{ID: "v1", SecretRef: "creds"}}, map[string][]cloud.VolumeID{"w1": {"v1"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v1 served", func() bool { return r.served(t, "v1", "w1") })
	for _, c := range append(r.capabilityCalls("v1"), callsNamed(r.d, "ValidateVolumeCapabilities", "v1")...) {
		if !slices.Equal(c.SecretKeys, []string{"password"}) {
			t.Errorf("%s sent secrets %v", c, c.SecretKeys)
		}
	}

	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	refusal := "csi: secrets file " + path + " has mode 0644: it must be readable by its owner alone"
	err := r.applySpecs([]store.VolumeSpec{{ID: "v2", SecretRef: "creds"}}, nil)
	if err == nil || !strings.Contains(err.Error(), `volume v2: csi.secretRef "creds": `+refusal) || !errors.Is(err, controller.ErrInvalid) {
		t.Fatalf("apply with an open secrets file: %v", err)
	}
	if _, ok, _ := r.e.Ctl().Store().Volume("v2"); ok {
		t.Error("a refused apply stored v2")
	}
	if err := r.applyUnchecked([]store.VolumeSpec{{ID: "v2", SecretRef: "creds"}}, map[string][]cloud.VolumeID{"w2": {"v2"}}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the attach of v2 refused", func() bool {
		ev := r.events("v2")
		return strings.Contains(ev, "FailedAttachVolume") && strings.Contains(ev, refusal)
	})
	if n := r.d.Count("ControllerPublishVolume", "v2"); n != 0 {
		t.Errorf("%d ControllerPublishVolume of v2 sent without its secrets", n)
	}
	if err := r.e.Ctl().DeleteWorkload("w1"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "the detach of v1 sent without secrets, refused", func() bool {
		return strings.Contains(r.events("v1"), "sent without the volume's secrets: reading them failed: volume v1: csi.secretRef \"creds\": "+refusal)
	})
	shown := getVolumesJSON(t, r.e)
	for _, want := range []string{`"secret_ref":"creds"`, `"name":"v1"`, `"name":"v2"`} {
		if !strings.Contains(shown, want) {
			t.Errorf("get -o json lacks %s:\n%s", want, shown)
		}
	}

	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v2 served and v1 detached once the file is closed", func() bool { return r.served(t, "v2", "w2") && r.gone("v1") })
	if err := r.e.Ctl().DeleteWorkload("w2"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "v2 unpublished", func() bool { return r.gone("v2") })
	for _, c := range callsNamed(r.d, "ControllerUnpublishVolume", "v2") {
		if !slices.Equal(c.SecretKeys, []string{"password"}) {
			t.Errorf("%s sent secrets %v", c, c.SecretKeys)
		}
	}
	for what, text := range map[string]string{"events": r.allEvents(), "log": r.log.String(), "get -o json": shown, "the driver's log": r.d.Describe()} {
		if strings.Contains(text, secretValue) {
			t.Errorf("the secret shows in the %s", what)
		}
	}
	if !strings.Contains(r.log.String(), "mode 0644") {
		t.Error("the log never said why the secrets file was refused")
	}
}

// getVolumesJSON is tether get volumes -o json, as the API serves it,
// compacted (protojson varies its spaces).
func getVolumesJSON(t *testing.T, e *Embedded) string {
	t.Helper()
	c, ctx, _ := loopClient(t, e)
	res, err := c.Get(ctx(), &messages.GetRequest{Kind: "volume"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true, EmitUnpopulated: true}.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// Driver fields on a volume of a cloud that takes none (the sim) are
// refused by the API, naming the volume.
func TestDriverFieldsRefusedOnTheSim(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir, cfg.Nodes, cfg.LogOutput, cfg.LogLevel = t.TempDir(), 1, testLog{t}, "warn"
	e, err := StartEmbedded(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Stop(); err != nil {
			t.Error(err)
		}
	})
	_, _, apply := loopClient(t, e)
	err = apply(&messages.Document{Doc: &messages.Document_Volume{Volume: &messages.VolumeDoc{Name: "b", VolumeMode: "Block"}}})
	if err == nil || !strings.Contains(err.Error(), `volume "b": volumeMode Block, fsType, mountOptions and csi are what a CSI driver needs`) {
		t.Errorf("a Block volume on the sim: %v", err)
	}
	if _, ok, _ := e.Ctl().Store().Volume("b"); ok {
		t.Error("stored")
	}
}
