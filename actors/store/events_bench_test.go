package store

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tether/tether/actors/events"
	"github.com/tether/tether/actors/nodestatus"
	"github.com/tether/tether/cloud"
)

// eventLogOf is the event log beside a benchmark's store.
func eventLogOf(b *testing.B, s Store) events.Log {
	var l events.Log
	var err error
	switch s := s.(type) {
	case *Bolt:
		l, err = s.Events(EventOptions{})
	case *Etcd:
		l, err = s.Events(EventOptions{})
	}
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// BenchmarkEventsWriteCost: what recording events costs the control
// plane's writes. Each op is a node status write (as a node actor makes,
// 16 writers at once) that records two events; with events=off they are
// not persisted, with events=on they go to the store through a Writer
// (batched, on its own goroutine), flushed within the timed run, so that
// ns/op carries the whole cost. Compare on=off in one run:
//
//	go test -run '^$' -bench EventsWriteCost ./actors/store
func BenchmarkEventsWriteCost(b *testing.B) {
	for _, bs := range benchStores {
		for _, on := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/events=%v", bs.name, map[bool]string{false: "off", true: "on"}[on]), func(b *testing.B) {
				s := bs.open(b)
				var w *events.Writer
				if on {
					w = events.NewWriter(eventLogOf(b, s), events.WriterConfig{})
					defer w.Close()
				}
				const writers = 16
				b.ResetTimer()
				var wg sync.WaitGroup
				for g := range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						node := cloud.NodeName(fmt.Sprintf("n%d", g))
						for i := g; i < b.N; i += writers {
							st := nodestatus.Status{Name: node, Ready: i%2 == 0}
							if err := s.PutNodeStatus(st); err != nil {
								b.Error(err)
								return
							}
							if w != nil {
								for _, typ := range []string{"SuccessfulAttachVolume", "SuccessfulMountVolume"} {
									w.Offer(events.Event{Time: time.Now(), Object: events.Ref{Kind: events.KindVolume, Name: fmt.Sprintf("v%d", i%1000), UID: "u"},
										Type: typ, Node: string(node), Message: "AttachVolume.Attach succeeded for volume"})
								}
							}
						}
					}()
				}
				wg.Wait()
				if w != nil {
					if err := w.Flush(context.Background()); err != nil {
						b.Fatal(err)
					}
					st := w.Stats()
					b.ReportMetric(float64(st.Written)/float64(max(1, st.Flushes)), "events/flush")
					b.ReportMetric(float64(st.Dropped+st.Failed)/float64(b.N), "lost/op")
				}
			})
		}
	}
}

// BenchmarkEventAppend: one transaction of 256 events (the Writer's
// batch) into a log that holds up to 100 events for each of 1,000 names.
func BenchmarkEventAppend(b *testing.B) {
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			l := eventLogOf(b, bs.open(b))
			batch := make([]events.Event, 256)
			b.ResetTimer()
			for i := range b.N {
				for j := range batch {
					batch[j] = events.Event{Time: time.Now(), Object: events.Ref{Kind: events.KindVolume, Name: fmt.Sprintf("v%d", (i*256+j)%1000)}, Type: "SuccessfulAttachVolume", Message: "attached"}
				}
				if err := l.AppendEvents(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/event")
		})
	}
}
