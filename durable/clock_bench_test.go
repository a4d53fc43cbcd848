package durable_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// BenchmarkClockLateness measures how late a tick's handler starts after its scheduled
// time on one instance (every 10 ms, memory journal), reporting the median and the 99th
// percentile in microseconds. One op is one tick.
func BenchmarkClockLateness(b *testing.B) {
	s, _ := durable.Every(10 * time.Millisecond)
	j, err := journal.New(memory.New(), journal.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var late []time.Duration
	done := make(chan struct{})
	app, err := engine.New(durable.With(j), durable.Clock(tickFlow, s, func(fx *engine.Fx, in durable.Tick) (struct{}, error) {
		d := time.Since(in.At)
		mu.Lock()
		defer mu.Unlock()
		late = append(late, d)
		if len(late) == b.N {
			close(done)
		}
		return struct{}{}, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	if err := app.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	<-done
	b.StopTimer()
	_ = app.Close(context.Background())
	mu.Lock()
	defer mu.Unlock()
	slices.Sort(late)
	b.ReportMetric(float64(late[len(late)/2].Microseconds()), "p50-late-µs")
	b.ReportMetric(float64(late[len(late)*99/100].Microseconds()), "p99-late-µs")
}
