package loop

import (
	"reflect"
	"testing"

	"github.com/tether/tether/cloud"
)

// Inventory lists every volume, attached or not, and every instance,
// stopped ones included, sorted; a closed Cloud lists nothing.
func TestInventory(t *testing.T) {
	f := newFixture(t, Config{})
	f.attach(t, "multi", f.i2)
	f.attach(t, "multi", f.i1)
	if err := f.c.Terminate(f.i2); err != nil {
		t.Fatal(err)
	}
	want := Inventory{
		Volumes: []InventoryVolume{
			{ID: "excl", Mode: cloud.Exclusive, Size: mib},
			{ID: "multi", Mode: cloud.MultiNode, Size: mib, Attached: []cloud.InstanceID{f.i1}},
			{ID: "ro", Mode: cloud.MultiNode, Size: mib, ReadOnly: true},
		},
		Instances: []InventoryInstance{{ID: f.i1, Node: "n1", Running: true}, {ID: f.i2, Node: "n2"}},
	}
	if got := f.c.Inventory(); !reflect.DeepEqual(got, want) {
		t.Errorf("Inventory() = %+v\nwant %+v", got, want)
	}
	if err := f.c.ReleaseAll(); err != nil {
		t.Fatal(err)
	}
	if err := f.c.Close(); err != nil {
		t.Fatal(err)
	}
	if got := f.c.Inventory(); len(got.Volumes)+len(got.Instances) != 0 {
		t.Errorf("a closed Cloud lists %+v", got)
	}
}
