package capacity

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/bbc28f59/engine/bench/internal/agentbench"
)

// Probe reads a server's figures between measurements. Any reader may be nil: the
// figures it would give are then reported as unknown, never as zero.
type Probe struct {
	// PID is the server process, read from /proc (CPU time, resident memory); 0 for none.
	PID int
	// StatsURL is a [StatsPath] of a capacity target server (heap, goroutines, SQLite
	// commits); "" for none.
	StatsURL string
	// PostgresDSN and Database read the commits of Database from pg_stat_database; the
	// benchmark gives each Postgres target a database of its own, so no other client's
	// commits are counted. The statistics of a busy connection reach the view within
	// about a second, so the count of a window of several seconds is close.
	PostgresDSN, Database string
	// SQLite counts commits with the stats' SQLiteCommits.
	SQLite bool
}

// Snapshot is a reading of a [Probe]. The Has* fields say which figures were read.
type Snapshot struct {
	At         time.Time
	CPU        time.Duration // user+system CPU of the server process so far
	RSS        uint64        // resident set, bytes
	Heap       uint64        // HeapInuse+StackInuse, bytes
	Goroutines int
	Commits    int64
	Backends   int // connections to the target's own database (Postgres)
	HasCPU     bool
	HasHeap    bool
	HasCommits bool
}

// Commits says what a probe counts as a commit, for the table's notes.
func (p Probe) Commits() string {
	switch {
	case p.Database != "":
		return "Postgres pg_stat_database.xact_commit of the target's own database"
	case p.SQLite:
		return "SQLite commit hook on every connection of the server (transactions and single writes)"
	}
	return ""
}

// Read takes a snapshot; gc asks the server to collect garbage first (for idle memory).
func (p Probe) Read(ctx context.Context, gc bool) (Snapshot, error) {
	s := Snapshot{At: time.Now()}
	if p.PID > 0 {
		cpu, rss, err := agentbench.ProcessStat(p.PID)
		if err != nil {
			return s, err
		}
		s.CPU, s.RSS, s.HasCPU = cpu, rss, true
	}
	if p.StatsURL != "" {
		st, err := serverStats(ctx, p.StatsURL, gc)
		if err != nil {
			return s, err
		}
		s.Heap, s.Goroutines, s.HasHeap = st.HeapInuse+st.StackInuse, st.Goroutines, true
		if p.SQLite {
			s.Commits, s.HasCommits = st.SQLiteCommits, true
		}
	}
	if p.Database != "" {
		n, backends, err := xactCommit(ctx, p.PostgresDSN, p.Database)
		if err != nil {
			return s, err
		}
		s.Commits, s.Backends, s.HasCommits = n, backends, true
	}
	return s, nil
}

func serverStats(ctx context.Context, url string, gc bool) (ServerStats, error) {
	if gc {
		url += "?gc=1"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ServerStats{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ServerStats{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ServerStats{}, fmt.Errorf("capacity: %s: HTTP %d", url, resp.StatusCode)
	}
	var st ServerStats
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// xactCommit reads the commits of database and the connections to it.
func xactCommit(ctx context.Context, dsn, database string) (commits int64, backends int, err error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(ctx)
	err = conn.QueryRow(ctx, "SELECT xact_commit, numbackends FROM pg_stat_database WHERE datname = $1", database).Scan(&commits, &backends)
	return commits, backends, err
}

// machineBusy is the CPU time all of the machine's cores spent busy so far (the
// first line of /proc/stat: all but idle and iowait), or -1 when it cannot be read.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return -1
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return -1
	}
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is already in user
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return -1
		}
		busy += n
	}
	return time.Duration(busy) * (time.Second / 100)
}

// selfCPU is this process's user+system CPU time: the load client's.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// LoadAverage is the machine's 1-minute load average (/proc/loadavg), or -1.
func LoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}
