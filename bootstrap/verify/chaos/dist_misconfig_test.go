package chaos

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tether/tether/bootstrap/process/distributed"
	"github.com/tether/tether/bootstrap/verify/journal"
)

// The join gate's rule judges a misconfigured member on its own journal:
// one that only started and then exited non-zero passes; one that acted
// (a cloud call, a node status write, an event), joined, never ran, still
// ran after its bound or exited 0 is reported.
func TestJudgeOutsider(t *testing.T) {
	t0 := time.Now()
	start := journal.Record{Time: t0.UnixNano(), Kind: journal.KindStart, Text: "controller member"}
	failed := errors.New("exit status 1")
	for _, tc := range []struct {
		name string
		o    outsider
		recs []journal.Record
		want []string // a substring of each violation's detail, in order
	}{
		{name: "kept out", o: outsider{ended: true, exit: failed}, recs: []journal.Record{start}},
		{name: "acted", o: outsider{ended: true, exit: failed}, recs: []journal.Record{start,
			{Time: t0.Add(time.Second).UnixNano(), Kind: journal.KindCloudCall, Op: "attach", Volume: "vol-1", Text: "i-n1-1"},
			{Time: t0.Add(2 * time.Second).UnixNano(), Kind: journal.KindStatus, Node: "n1"},
			{Time: t0.Add(3 * time.Second).UnixNano(), Kind: journal.KindEvent, Op: "SuccessfulAttach", Volume: "vol-1"},
		}, want: []string{"cloud-call attach node= volume=vol-1 i-n1-1", "status  node=n1", "event SuccessfulAttach"}},
		{name: "joined", o: outsider{ended: true, exit: failed}, recs: []journal.Record{start,
			{Time: t0.Add(time.Second).UnixNano(), Kind: journal.KindJoined, Text: "member-id"},
		}, want: []string{"joined the placement"}},
		{name: "never ran", o: outsider{ended: true, exit: failed}, want: []string{"does not record its start"}},
		{name: "still running", o: outsider{}, recs: []journal.Record{start}, want: []string{"still running"}},
		{name: "exited 0", o: outsider{ended: true}, recs: []journal.Record{start}, want: []string{"exited 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.o.index, tc.o.kind, tc.o.started = 3, distributed.ForeignCA, t0
			got := judgeOutsider(tc.o, tc.recs, nil)
			if len(got) != len(tc.want) {
				t.Fatalf("%d violations, want %d: %v", len(got), len(tc.want), got)
			}
			for i, v := range got {
				if v.Invariant != JoinGate || !strings.Contains(v.Detail, tc.want[i]) || !strings.Contains(v.Detail, "misconfigured member 3 (foreign-ca)") {
					t.Errorf("violation %d: %v, want %s naming the member and %q", i, v, JoinGate, tc.want[i])
				}
			}
		})
	}
}

// The runner judges the misconfigured members' journals as the members
// wrote them: a member that acted is caught through the file.
func TestJudgeOutsidersReadsTheJournals(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, recs ...journal.Record) string {
		path := filepath.Join(dir, name)
		w, err := journal.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			w.Write(r)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	start := journal.Record{Kind: journal.KindStart, Text: "controller member"}
	quiet := write("misconfigured-3.1.jsonl", start)
	acted := write("misconfigured-4.1.jsonl", start, journal.Record{Kind: journal.KindCloudCall, Op: "detach", Volume: "vol-2", Text: "i-n2-2"})
	failed := errors.New("exit status 1")
	r := &distRunner{outsiders: []outsider{
		{index: 3, kind: distributed.NoRemoteTLS, journal: quiet, started: time.Now(), ended: true, exit: failed},
		{index: 4, kind: distributed.ForeignCA, journal: acted, started: time.Now(), ended: true, exit: failed},
		{index: 5, kind: distributed.NoRemoteTLS, journal: filepath.Join(dir, "missing.jsonl"), started: time.Now(), ended: true, exit: failed},
	}}
	got := r.judgeOutsiders()
	if len(got) != 2 {
		t.Fatalf("%d violations, want 2 (member 4 acted, member 5's journal is missing): %v", len(got), got)
	}
	if !strings.Contains(got[0].Detail, "misconfigured member 4") || !strings.Contains(got[0].Detail, "cloud-call detach") {
		t.Errorf("member 4's cloud call not reported: %v", got[0])
	}
	if !strings.Contains(got[1].Detail, "misconfigured member 5") || !strings.Contains(got[1].Detail, "cannot be read") {
		t.Errorf("member 5's missing journal not reported: %v", got[1])
	}
}
