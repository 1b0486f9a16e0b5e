package bench

import (
	"encoding/json"
	"errors"
	"fmt"
)

// CheckDistributedJSON checks tether bench --distributed --json's output:
// every field present, for both sides, every phase in order, and each
// figure sane: a phase that applies has its time, its ratio to the
// embedded side, its store requests (per document where it applied
// documents), its cloud calls and every member's CPU time and peak RSS; a
// phase that does not apply says why; no member lost its lease.
func CheckDistributedJSON(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	if err := has(top, "", "volumes", "nodes", "controllers", "attach_limit", "cloud_latency_ms", "sync_period_seconds", "embedded", "distributed"); err != nil {
		return err
	}
	var shape struct{ Volumes, Nodes, Controllers int }
	if err := json.Unmarshal(data, &shape); err != nil {
		return err
	}
	if shape.Volumes < 1 || shape.Nodes < 1 || shape.Controllers < 1 {
		return fmt.Errorf("volumes %d, nodes %d, controllers %d: want each at least 1", shape.Volumes, shape.Nodes, shape.Controllers)
	}
	if err := checkEmbeddedJSON(top["embedded"]); err != nil {
		return fmt.Errorf("embedded: %w", err)
	}
	if err := checkDistSideJSON(top["distributed"], shape.Controllers); err != nil {
		return fmt.Errorf("distributed: %w", err)
	}
	return nil
}

// has names the first of keys m lacks (under where).
func has(m map[string]json.RawMessage, where string, keys ...string) error {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return fmt.Errorf("%slacks %q", where, k)
		}
	}
	return nil
}

// checkEmbeddedJSON checks a Result: .ci/benchcheck.go's rules.
func checkEmbeddedJSON(raw json.RawMessage) error {
	var r map[string]json.RawMessage
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if err := has(r, "", "volumes", "nodes", "phases", "heap_bytes_per_volume", "peak_rss_bytes", "baseline_seconds"); err != nil {
		return err
	}
	var phases []map[string]json.RawMessage
	if err := json.Unmarshal(r["phases"], &phases); err != nil {
		return err
	}
	if len(phases) != len(phaseNames) {
		return fmt.Errorf("%d phases, want %v", len(phases), phaseNames)
	}
	for i, p := range phases {
		if err := has(p, fmt.Sprintf("phase %d ", i), "name", "seconds", "messages", "cloud_calls", "fsyncs", "baseline_ratio"); err != nil {
			return err
		}
		var ph Phase
		if err := remarshal(p, &ph); err != nil {
			return err
		}
		if ph.Name != phaseNames[i] || ph.Seconds <= 0 {
			return fmt.Errorf("phase %d: %q in %gs, want %q in more than 0s", i, ph.Name, ph.Seconds, phaseNames[i])
		}
	}
	return nil
}

func checkDistSideJSON(raw json.RawMessage, controllers int) error {
	var side map[string]json.RawMessage
	if err := json.Unmarshal(raw, &side); err != nil {
		return err
	}
	if err := has(side, "", "start_seconds", "phases", "lease_lapses"); err != nil {
		return err
	}
	var s DistSide
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	if s.StartSeconds <= 0 {
		return fmt.Errorf("start_seconds %g: want more than 0", s.StartSeconds)
	}
	if s.LeaseLapses != 0 {
		return fmt.Errorf("%d lease lapses: a member lost its lease while alive", s.LeaseLapses)
	}
	var phases []map[string]json.RawMessage
	if err := json.Unmarshal(side["phases"], &phases); err != nil {
		return err
	}
	if len(phases) != len(phaseNames) {
		return fmt.Errorf("%d phases, want %v (one that does not apply says so)", len(phases), phaseNames)
	}
	var errs []error
	for i, p := range phases {
		if err := checkDistPhaseJSON(p, i, controllers); err != nil {
			errs = append(errs, fmt.Errorf("phase %d (%s): %w", i, phaseNames[i], err))
		}
	}
	// A member may spend less than a clock tick (10 ms) in a short
	// phase, but not over the whole run.
	cpu := make([]float64, controllers)
	for _, p := range s.Phases {
		for j, m := range p.Members {
			if j < controllers {
				cpu[j] += m.CPUSeconds
			}
		}
	}
	for j, c := range cpu {
		if c <= 0 {
			errs = append(errs, fmt.Errorf("controller-%d: no CPU time over the run: its /proc entry was not read", j))
		}
	}
	return errors.Join(errs...)
}

func checkDistPhaseJSON(p map[string]json.RawMessage, i, controllers int) error {
	if err := has(p, "", "name", "applicable", "seconds", "ratio_to_embedded", "documents", "store_requests", "cloud_calls", "fsyncs", "members", "lease_lapses", "leases_expired", "nodes_not_ready"); err != nil {
		return err
	}
	var sr map[string]json.RawMessage
	if err := json.Unmarshal(p["store_requests"], &sr); err != nil {
		return err
	}
	if err := has(sr, "store_requests ", "total", "kv", "per_document", "kv_per_document", "per_volume", "by_method"); err != nil {
		return err
	}
	var ph DistPhase
	if err := remarshal(p, &ph); err != nil {
		return err
	}
	switch {
	case ph.Name != phaseNames[i]:
		return fmt.Errorf("named %q", ph.Name)
	case !ph.Applicable && ph.Note == "":
		return errors.New("does not apply, and its note does not say why")
	case !ph.Applicable:
		return nil
	case ph.Seconds <= 0:
		return fmt.Errorf("seconds %g", ph.Seconds)
	case ph.RatioToEmbedded == nil || *ph.RatioToEmbedded <= 0:
		return errors.New("no ratio to the embedded side")
	case ph.StoreRequests.Total <= 0 || ph.StoreRequests.PerVolume <= 0 || len(ph.StoreRequests.ByMethod) == 0:
		return fmt.Errorf("store requests %+v: want some", ph.StoreRequests)
	case (ph.Documents > 0) != (ph.StoreRequests.PerDocument != nil && ph.StoreRequests.KVPerDocument != nil):
		return fmt.Errorf("%d documents, but per_document %v and kv_per_document %v", ph.Documents, ph.StoreRequests.PerDocument, ph.StoreRequests.KVPerDocument)
	case ph.StoreRequests.PerDocument != nil && *ph.StoreRequests.PerDocument <= 0:
		return fmt.Errorf("per_document %g", *ph.StoreRequests.PerDocument)
	case len(ph.CloudCalls) == 0:
		return errors.New("no cloud calls: the members' metrics were not read")
	case ph.Fsyncs <= 0:
		return fmt.Errorf("fsyncs %d: etcd's were not read", ph.Fsyncs)
	case len(ph.Members) != controllers:
		return fmt.Errorf("%d members' figures, want %d", len(ph.Members), controllers)
	case ph.LeaseLapses != 0:
		return fmt.Errorf("%d lease lapses", ph.LeaseLapses)
	}
	for _, m := range ph.Members {
		if m.Name == "" || m.CPUSeconds < 0 || m.PeakRSSBytes <= 0 {
			return fmt.Errorf("member %+v: want its name, CPU time and peak RSS", m)
		}
	}
	return nil
}

func remarshal(m map[string]json.RawMessage, into any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, into)
}
