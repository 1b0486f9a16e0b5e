package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/messages"
)

// printJSON writes m as stable JSON (proto field names, every field).
func printJSON(w io.Writer, m proto.Message) error {
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  ", UseProtoNames: true, EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

func printTable(out io.Writer, res *messages.GetResponse) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	switch {
	case res.Volumes != nil:
		fmt.Fprintln(w, "NAME\tACCESS MODE\tWANTED ON\tATTACHMENTS")
		for _, v := range res.Volumes {
			var att []string
			for _, a := range v.Attachments {
				att = append(att, a.Node+"="+a.State)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", v.Spec.Name, v.Spec.AccessMode, dash(strings.Join(v.DesiredNodes, ",")), dash(strings.Join(att, ",")))
		}
	case res.Nodes != nil:
		fmt.Fprintln(w, "NAME\tINSTANCE\tRUNNING\tREADY\tOUT OF SERVICE\tATTACHED\tIN USE")
		for _, n := range res.Nodes {
			st := n.Status
			if st == nil {
				st = &messages.NodeStatus{}
			}
			fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%v\t%d\t%d\n", n.Spec.Name, dash(n.InstanceId), n.InstanceRunning, st.Ready, st.OutOfService, len(st.VolumesAttached), len(st.VolumesInUse))
		}
	case res.Workloads != nil:
		fmt.Fprintln(w, "NAME\tNODE\tPHASE\tVOLUMES\tMOUNTED")
		for _, wl := range res.Workloads {
			var vols []string
			for _, v := range wl.Spec.Volumes {
				vols = append(vols, v.Name)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d/%d\n", wl.Spec.Name, wl.Spec.Node, wl.Phase, dash(strings.Join(vols, ",")), len(wl.MountedVolumes), len(vols))
		}
	default:
		fmt.Fprintln(w, "No resources found.")
	}
	return w.Flush()
}

func printDescribe(out io.Writer, res *messages.DescribeResponse) error {
	if err := printTable(out, res.Object); err != nil {
		return err
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if vs := res.GetObject().GetVolumes(); len(vs) == 1 {
		printVolumeDriver(w, vs[0].GetSpec())
	}
	fmt.Fprintf(w, "\nUID: %s\n", dash(objectUID(res.Object)))
	fmt.Fprintln(w, "\nEvents:")
	if res.OmittedEvents > 0 {
		fmt.Fprintf(w, "  (%d older events omitted)\n", res.OmittedEvents)
	}
	if len(res.Events) == 0 {
		fmt.Fprintln(w, "  <none>")
		return w.Flush()
	}
	fmt.Fprintln(w, "  TIME\tTYPE\tREASON\tNODE\tMESSAGE")
	for _, e := range res.Events {
		typ := "Normal"
		if e.Warning {
			typ = "Warning"
		}
		fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", time.Unix(0, e.TimeUnixNano).UTC().Format(time.RFC3339), typ, e.Type, dash(e.Node), e.Message)
	}
	return w.Flush()
}

// printVolumeDriver writes what a volume hands its storage driver. Of its
// secrets only the name of their file is known here: the server never
// reads them.
func printVolumeDriver(w io.Writer, d *messages.VolumeDoc) {
	attrs := make([]string, 0, len(d.GetCsi().GetVolumeAttributes()))
	for _, k := range slices.Sorted(maps.Keys(d.GetCsi().GetVolumeAttributes())) {
		attrs = append(attrs, k+"="+d.Csi.VolumeAttributes[k])
	}
	fmt.Fprintf(w, "\nVolume mode:\t%s\n", dash(d.GetVolumeMode()))
	fmt.Fprintf(w, "FS type:\t%s\n", dash(d.GetFsType()))
	fmt.Fprintf(w, "Mount options:\t%s\n", dash(strings.Join(d.GetMountOptions(), ",")))
	fmt.Fprintf(w, "Volume attributes:\t%s\n", dash(strings.Join(attrs, ",")))
	fmt.Fprintf(w, "Secret ref:\t%s\n", dash(d.GetCsi().GetSecretRef()))
}

// objectUID is the UID of the one object a describe shows.
func objectUID(res *messages.GetResponse) string {
	switch {
	case len(res.GetVolumes()) > 0:
		return res.Volumes[0].ObjectUid
	case len(res.GetNodes()) > 0:
		return res.Nodes[0].ObjectUid
	case len(res.GetWorkloads()) > 0:
		return res.Workloads[0].ObjectUid
	}
	return ""
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
