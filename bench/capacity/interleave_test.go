package capacity

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestQuiesceWaitsForTheServer checks that the next target's level waits until the
// last one's server has ended the conversations its client abandoned: a server still
// running 200 goroutines over its idle 10 is read again until it is back near idle.
func TestQuiesceWaitsForTheServer(t *testing.T) {
	t.Parallel()
	var reads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		g := 210
		if reads.Add(1) > 3 {
			g = 12
		}
		_ = json.NewEncoder(w).Encode(ServerStats{Goroutines: g})
	}))
	defer srv.Close()
	base := Snapshot{Goroutines: 10, HasHeap: true}
	if err := quiesce(t.Context(), Probe{StatsURL: srv.URL}, base); err != nil {
		t.Fatal(err)
	}
	if n := reads.Load(); n != 4 {
		t.Fatalf("quiesce read the server %d times, want 4: three busy reads and the idle one", n)
	}
}
