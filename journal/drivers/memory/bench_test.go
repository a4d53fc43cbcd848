package memory_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
	"github.com/bbc28f59/engine/journal/journaltest"
)

// handRun and handPark are the baseline's own records: a map and a mutex, written by hand.
type handRun struct {
	input, output []byte
	status, owner string
	expires       time.Time
	epoch         int64
	parks         map[string]*handPark
}

type handPark struct {
	payload []byte
	decided bool
	kind    string
}

type handStore struct {
	mu   sync.Mutex
	runs map[string]*handRun
}

// cycle does by hand what the journal's cycle does: insert run, insert park, mark parked,
// list parks, decide, claim (load steps and parks), complete.
func (s *handStore) cycle(_ context.Context, i int) error {
	id := fmt.Sprintf("raw-%d", i)
	in := []byte(`{"q":"hello"}`)
	now := time.Now()
	s.mu.Lock()
	s.runs[id] = &handRun{input: bytes.Clone(in), status: "running", owner: "bench", expires: now.Add(15 * time.Second), epoch: 1, parks: map[string]*handPark{}}
	s.mu.Unlock()

	s.mu.Lock()
	r := s.runs[id]
	if r.owner != "bench" || r.epoch != 1 {
		s.mu.Unlock()
		return errors.New("lost")
	}
	r.parks["k"] = &handPark{payload: bytes.Clone(in)}
	s.mu.Unlock()

	s.mu.Lock()
	r.status, r.owner = "parked", ""
	s.mu.Unlock()

	s.mu.Lock()
	listed := make([]handPark, 0, len(r.parks)) // read back, as a driver returns copies
	for _, p := range r.parks {
		listed = append(listed, *p)
	}
	s.mu.Unlock()
	_ = listed

	s.mu.Lock()
	p := r.parks["k"]
	if p.decided {
		s.mu.Unlock()
		return errors.New("conflict")
	}
	p.decided, p.kind = true, "approve"
	s.mu.Unlock()

	s.mu.Lock()
	if r.owner != "" && r.expires.After(now) {
		s.mu.Unlock()
		return errors.New("busy")
	}
	r.owner, r.expires, r.status = "bench", now.Add(15*time.Second), "running"
	r.epoch++
	claimed := *r
	s.mu.Unlock()
	_ = claimed
	s.mu.Lock()
	listed = make([]handPark, 0, len(r.parks))
	for _, p := range r.parks {
		listed = append(listed, *p)
	}
	s.mu.Unlock()
	_ = listed

	s.mu.Lock()
	r.status, r.output, r.owner = "completed", bytes.Clone(in), ""
	s.mu.Unlock()
	return nil
}

func BenchmarkJournal(b *testing.B) {
	journaltest.Benchmark(b,
		func(*testing.B) journal.Driver { return memory.New() },
		func(*testing.B, journal.Driver) journaltest.Baseline {
			s := &handStore{runs: map[string]*handRun{}}
			return s.cycle
		})
}
