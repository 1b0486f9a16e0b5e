package api

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/store"
	"github.com/tether/tether/cloud"
	"github.com/tether/tether/messages"
)

// describeUntil polls describe (bounded) until an event of type typ shows.
func (f *fixture) describeUntil(kind, name, typ string) *messages.DescribeResponse {
	f.t.Helper()
	c, ctx := f.client(), f.ctx(f.token)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := c.Describe(ctx, &messages.DescribeRequest{Kind: kind, Name: name})
		if err != nil {
			f.t.Fatal(err)
		}
		if slices.ContainsFunc(res.Events, func(e *messages.EventInfo) bool { return e.Type == typ }) {
			return res
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("no %s event for %s/%s: %v", typ, kind, name, res.Events)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A volume deleted and created again under its name is another object: a
// new UID, none of the old one's events, none of its status.
func TestRecreatedVolumeHasNoOldEvents(t *testing.T) {
	f := newFixture(t)
	c, ctx := f.client(), f.ctx(f.token)
	apply := func(docs ...*messages.Document) {
		t.Helper()
		if _, err := c.Apply(ctx, &messages.ApplyRequest{Documents: docs}); err != nil {
			t.Fatal(err)
		}
	}
	apply(node("n1"), vol("v1", ""), wl("w1", "n1", "v1"))
	old := f.describeUntil("volume", "v1", "SuccessfulAttachVolume")
	if _, err := c.Delete(ctx, &messages.DeleteRequest{Kind: "workload", Name: "w1"}); err != nil {
		t.Fatal(err)
	}
	f.describeUntil("volume", "v1", "SuccessfulDetachVolume")
	oldUID := old.Object.Volumes[0].ObjectUid
	if len(oldUID) != 32 {
		t.Fatalf("describe shows UID %q, want one", oldUID)
	}

	if _, err := c.Delete(ctx, &messages.DeleteRequest{Kind: "volume", Name: "v1"}); err != nil {
		t.Fatal(err)
	}
	apply(vol("v1", ""))
	res, err := c.Describe(ctx, &messages.DescribeRequest{Kind: "volume", Name: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	v := res.Object.Volumes[0]
	if v.ObjectUid == oldUID || len(v.ObjectUid) != 32 {
		t.Fatalf("recreated volume's UID %q, the deleted one's %q: want a new one", v.ObjectUid, oldUID)
	}
	if len(res.Events) != 0 || res.OmittedEvents != 0 {
		t.Fatalf("recreated volume shows events %v (%d omitted), want none of the deleted one's", res.Events, res.OmittedEvents)
	}
	got, err := c.Get(ctx, &messages.GetRequest{Kind: "volume", Name: "v1"})
	if err != nil || got.Volumes[0].ObjectUid != v.ObjectUid || len(got.Volumes[0].Attachments) != 0 {
		t.Fatalf("get = %v, %v; want UID %s, no attachments", got, err, v.ObjectUid)
	}
}

// putWorkloads stores n workloads named prefix-0000..., each using vols,
// directly in the store (the paging tests need no actors behind them).
func (f *fixture) putWorkloads(prefix string, n int, vols []cloud.VolumeID) []string {
	f.t.Helper()
	ops := make([]store.Op, n)
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("%s-%04d", prefix, i)
		ops[i] = store.Op{PutWorkload: &store.Workload{UID: names[i], Node: "n1", Volumes: vols}}
	}
	if err := f.store.Apply(ops); err != nil {
		f.t.Fatal(err)
	}
	return names
}

// listAll follows the continue tokens, checking that each page is within
// the limits, and returns the names in the order listed and the pages.
func (f *fixture) listAll(kind string, limit int32) (names []string, pages int) {
	f.t.Helper()
	c, ctx := f.client(), f.ctx(f.token)
	req := &messages.GetRequest{Kind: kind, Limit: limit}
	for {
		res, err := c.Get(ctx, req)
		if err != nil {
			f.t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if size := proto.Size(res); size > responseBudget+1024 {
			f.t.Fatalf("page %d is %d bytes, over the budget %d", pages, size, responseBudget)
		}
		for _, w := range res.Workloads {
			names = append(names, w.Spec.Name)
		}
		if res.Continue == "" {
			return names, pages
		}
		req.Continue = res.Continue
	}
}

// 1,700 workloads of 20 long volume names each: about 4.5 MB as one
// response, past gRPC's 4 MiB. Pages end at the byte budget, before the
// default limit, and together list every workload once, by name.
func TestGetPagesWithinByteBudget(t *testing.T) {
	f := newFixture(t)
	var vols []cloud.VolumeID
	for i := range 20 {
		vols = append(vols, cloud.VolumeID(fmt.Sprintf("%0120d", i)))
	}
	want := f.putWorkloads(strings.Repeat("w", 100), 1700, vols)

	c, ctx := f.client(), f.ctx(f.token)
	first, err := c.Get(ctx, &messages.GetRequest{Kind: "workloads"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(first.Workloads); n == 0 || n >= defaultLimit || first.Continue == "" {
		t.Fatalf("first page: %d workloads, continue %q; want fewer than %d (the byte budget) and a continue", n, first.Continue, defaultLimit)
	}
	if first.Workloads[0].ObjectUid == "" {
		t.Fatal("listed workload without its UID")
	}
	got, pages := f.listAll("workloads", 0)
	if !slices.Equal(got, want) || pages < 5 {
		t.Fatalf("listed %d workloads in %d pages; want the %d stored, by name, once each, in at least 5 pages", len(got), pages, len(want))
	}
}

// limit bounds a page (cut to the maximum); objects created or deleted
// between pages do not upset the ones after the cursor.
func TestGetPageLimitAndChangesBetweenPages(t *testing.T) {
	f := newFixture(t)
	f.putWorkloads("w", 1200, nil)
	c, ctx := f.client(), f.ctx(f.token)

	res, err := c.Get(ctx, &messages.GetRequest{Kind: "workload", Limit: 5000})
	if err != nil || len(res.Workloads) != maxLimit || res.Continue == "" {
		t.Fatalf("limit 5000: %d workloads, continue %q, %v; want %d and a continue", len(res.Workloads), res.Continue, err, maxLimit)
	}

	res, err = c.Get(ctx, &messages.GetRequest{Kind: "workload", Limit: 3})
	if err != nil || len(res.Workloads) != 3 || res.Workloads[2].Spec.Name != "w-0002" {
		t.Fatalf("limit 3: %v, %v", res, err)
	}
	// Between pages: the last listed and the next are deleted, one is
	// created just after the cursor, one before it.
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.store.DeleteWorkload("w-0002"))
	must(f.store.DeleteWorkload("w-0003"))
	must(f.store.PutWorkload(store.Workload{UID: "w-0002a", Node: "n1"}))
	must(f.store.PutWorkload(store.Workload{UID: "w-0000a", Node: "n1"}))
	res, err = c.Get(ctx, &messages.GetRequest{Kind: "workload", Limit: 3, Continue: res.Continue})
	var names []string
	for _, w := range res.GetWorkloads() {
		names = append(names, w.Spec.Name)
	}
	if err != nil || strings.Join(names, ",") != "w-0002a,w-0004,w-0005" {
		t.Fatalf("next page: %v, %v; want w-0002a,w-0004,w-0005", names, err)
	}
}

func TestGetRefusesBadPaging(t *testing.T) {
	f := newFixture(t)
	f.putWorkloads("w", 3, nil)
	c, ctx := f.client(), f.ctx(f.token)
	res, err := c.Get(ctx, &messages.GetRequest{Kind: "workloads", Limit: 1})
	if err != nil || res.Continue == "" {
		t.Fatalf("get: %v, %v", res, err)
	}
	for _, tt := range []struct {
		name    string
		req     *messages.GetRequest
		mention string
	}{
		{"not base64", &messages.GetRequest{Kind: "workloads", Continue: "%%%"}, "invalid continue token"},
		{"not a token", &messages.GetRequest{Kind: "workloads", Continue: "eyJ4IjoxfQ"}, "invalid continue token"},
		{"another kind's", &messages.GetRequest{Kind: "volumes", Continue: res.Continue}, "continues a list of workloads"},
		{"with a name", &messages.GetRequest{Kind: "workloads", Name: "w-0000", Continue: res.Continue}, "not with a name"},
		{"negative limit", &messages.GetRequest{Kind: "workloads", Limit: -1}, "limit -1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Get(ctx, tt.req)
			wantCode(t, err, codes.InvalidArgument, tt.mention)
		})
	}
}

// Describe keeps its response within the budget: the newest events that
// fit, and how many older ones were left out.
func TestDescribeBoundsEvents(t *testing.T) {
	f := newFixture(t)
	if _, err := f.client().Apply(f.ctx(f.token), &messages.ApplyRequest{Documents: []*messages.Document{node("n1")}}); err != nil {
		t.Fatal(err)
	}
	n, _, _ := f.store.Node("n1")
	for i := range 40 {
		f.rec.Record(eventOf("n1", n.ObjectUID, fmt.Sprintf("%02d %s", i, strings.Repeat("x", 100_000))))
	}
	res, err := f.client().Describe(f.ctx(f.token), &messages.DescribeRequest{Kind: "node", Name: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	var ours []*messages.EventInfo
	for _, e := range res.Events {
		if e.Type == "Test" {
			ours = append(ours, e)
		}
	}
	if size := proto.Size(res); size > responseBudget || len(ours) < 5 || res.OmittedEvents == 0 ||
		!strings.HasPrefix(ours[len(ours)-1].Message, "39 ") {
		t.Fatalf("describe: %d bytes, %d events (%d omitted); want at most %d bytes, the newest events, some omitted",
			size, len(res.Events), res.OmittedEvents, responseBudget)
	}
}

func eventOf(node, uid, msg string) events.Event {
	return events.Event{Time: time.Now(), Object: events.Ref{Kind: events.KindNode, Name: node, UID: uid}, Type: "Test", Message: msg}
}
