package chaos

import (
	"os"
	"strconv"
	"testing"

	"github.com/bbc28f59/engine/internal/testenv"
)

// TestChaos is the bounded run CI makes: real processes of the reference app, killed
// with SIGKILL at random points (20 cycles, ENGINE_CHAOS_CYCLES), then cut off from their
// database for a moment with every process alive (6 cycles, ENGINE_CHAOS_OUTAGE_CYCLES),
// on SQLite (one instance) and, when ENGINE_TEST_POSTGRES_DSN is set, on Postgres (two
// instances). It fails on any duplicate child run, effect made twice or never, handler
// run more often than the faults allow (with the database cut off: at all), missing or
// changed event, lost event, refused transcript or unfinished run. The long runs use the
// command: go run ./bench/cmd/chaos.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the chaos test builds the reference app and kills its processes")
	}
	cycles := 20
	if v := os.Getenv("ENGINE_CHAOS_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ENGINE_CHAOS_CYCLES=%q: %v", v, err)
		}
		cycles = n
	}
	if os.Getenv("AGUI_VERIFY") == "" {
		t.Log("AGUI_VERIFY is not set: transcripts are not checked with the AG-UI verifier here (CI checks them)")
	}
	outageCycles := 6
	if v := os.Getenv("ENGINE_CHAOS_OUTAGE_CYCLES"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("ENGINE_CHAOS_OUTAGE_CYCLES=%q: %v", v, err)
		}
		outageCycles = n
	}
	for _, mode := range []struct {
		name   string
		outage bool
		cycles int
	}{{"kill", false, cycles}, {"db-outage", true, outageCycles}} {
		for _, driver := range []string{"sqlite", "postgres"} {
			t.Run(mode.name+"/"+driver, func(t *testing.T) {
				dsn := ""
				if driver == "postgres" {
					dsn = testenv.PostgresDSN(t, "the Postgres chaos run")
				}
				cfg := Config{Driver: driver, PostgresDSN: dsn, Cycles: mode.cycles, DBOutage: mode.outage, Dir: t.TempDir(),
					AGUIVerify: os.Getenv("AGUI_VERIFY"), Logf: t.Logf}
				rep, err := Run(t.Context(), cfg)
				t.Log("\n" + rep.String())
				if err != nil {
					t.Fatal(err)
				}
				if rep.Failed() {
					t.Fatal("the chaos run broke a promise; see the failures above")
				}
				if rep.Conversations != mode.cycles*6 || rep.StepsChecked == 0 || rep.IDsShown == 0 {
					t.Fatalf("the run checked too little: %d conversations, %d steps, %d ids", rep.Conversations, rep.StepsChecked, rep.IDsShown)
				}
			})
		}
	}
}
