package gate_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
)

// sharedDatabases opens one database twice, through two handles, as two instances of an
// app would: SQLite (one shared in-memory database) and, with a DSN, Postgres (a schema
// of this test's own, dropped at the end, so that the auth tables of other tests and
// other runs on the server are not touched).
func sharedDatabases(t *testing.T) map[string]func(t *testing.T) [2]*bun.DB {
	return map[string]func(t *testing.T) [2]*bun.DB{
		"sqlite": func(t *testing.T) [2]*bun.DB {
			name := fmt.Sprintf("file:gate-shared-%d-%d?mode=memory&cache=shared&_pragma=busy_timeout(5000)", os.Getpid(), dbSeq.Add(1))
			var dbs [2]*bun.DB
			for i := range dbs {
				sqldb, err := sql.Open("sqlite", name)
				if err != nil {
					t.Fatal(err)
				}
				sqldb.SetMaxOpenConns(1)
				dbs[i] = bun.NewDB(sqldb, sqlitedialect.New())
			}
			// Closed in reverse, so the database lives until both handles are done.
			t.Cleanup(func() { _ = dbs[0].Close() })
			t.Cleanup(func() { _ = dbs[1].Close() })
			return dbs
		},
		"postgres": func(t *testing.T) [2]*bun.DB {
			dsn := testenv.Schema(t, testenv.PostgresDSN(t, "the Postgres run"), "gate_shared_")
			var dbs [2]*bun.DB
			for i := range dbs {
				dbs[i] = testenv.PostgresDB(t, dsn)
			}
			return dbs
		},
	}
}

// sharedInstance serves an app with auth whose sign-in limits are SQL limiters on db
// (tables signin_attempts and signin_failures), as a second instance on the same
// database would build them.
func sharedInstance(t *testing.T, db *bun.DB, clock *fakeClock, perIP gate.Limit) *harness {
	t.Helper()
	ctx := context.Background()
	limiter := func(l gate.Limit, table string) *gate.SQLLimiter {
		s, err := gate.NewSQLLimiter(db, l, gate.WithTable(table), gate.WithNow(clock.Now))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateTable(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	auth, err := gate.NewAuth(gate.AuthConfig{
		DB: db, Keys: gate.Keys{Current: gate.Key{Secret: testSecret}}, Hash: gate.FastHashParams, Now: clock.Now,
		IPSource:         headerIP{},
		AttemptsPerIP:    limiter(perIP, "signin_attempts"),
		FailuresPerEmail: limiter(gate.DefaultFailuresPerEmail, "signin_failures"),
	})
	if err != nil {
		t.Fatal(err)
	}
	app, err := engine.New(auth.Option())
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close(context.Background()) })
	for _, email := range []string{"alice@example.com", "bob@example.com"} {
		if _, err := auth.EnsureUser(ctx, gate.User{Email: email, Password: pw}); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{auth: auth, app: app, db: db, clock: clock, srv: httptest.NewServer(app.Handler())}
	t.Cleanup(h.srv.Close)
	return h
}

// Two instances on one database share both sign-in limits through their SQL limiters:
// attempts from one address count on both, an email locked on one is locked on the
// other, and peeking on either takes nothing.
func TestSignInLimitsSharedByInstances(t *testing.T) {
	t.Parallel()
	for name, open := range sharedDatabases(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dbs := open(t)
			clock := newClock()
			perIP := gate.Limit{Events: 4, Per: time.Hour}
			a, b := sharedInstance(t, dbs[0], clock, perIP), sharedInstance(t, dbs[1], clock, perIP)
			try := func(h *harness, ip, email, password string) string {
				status, hdr, env := h.post(t, signInPath, signInBody(email, password), asIP(ip)...)
				if status == http.StatusTooManyRequests {
					return fmt.Sprintf("429 %s %s", errorJSON(t, env), hdr.Get("Retry-After"))
				}
				return fmt.Sprint(status)
			}

			// Per address: four attempts an hour, wherever they land.
			var got []string
			for _, h := range []*harness{a, b, a, b, a, b} {
				got = append(got, try(h, "198.51.100.1", "nobody@example.com", pw))
			}
			// Both limits refill one attempt every 15 minutes.
			const locked = `429 {"code":"RateLimited","data":{"retryAfterMs":900000}} 900`
			if want := fmt.Sprint([]string{"401", "401", "401", "401", locked, locked}); fmt.Sprint(got) != want {
				t.Fatalf("one address on two instances: %v, want %s", got, want)
			}
			if got := try(b, "198.51.100.2", "bob@example.com", pw); got != "200" {
				t.Fatalf("another address: %s", got)
			}

			// Per email: five failures between them lock it on both, right password
			// or not; successes on either count nothing.
			for i := range 10 {
				if got := try([]*harness{a, b}[i%2], fmt.Sprintf("203.0.113.%d", i), "bob@example.com", pw); got != "200" {
					t.Fatalf("bob's sign-in %d: %s", i, got)
				}
			}
			for i := range 5 {
				if got := try([]*harness{b, a}[i%2], fmt.Sprintf("192.0.2.%d", i), "alice@example.com", "wrong password"); got != "401" {
					t.Fatalf("failure %d: %s", i, got)
				}
			}
			for _, h := range []*harness{a, b} {
				if got := try(h, "192.0.2.100", "alice@example.com", pw); got != locked {
					t.Errorf("alice's right password after 5 failures: %s, want %s", got, locked)
				}
			}
			clock.Advance(15 * time.Minute)
			if got := try(b, "192.0.2.101", "alice@example.com", pw); got != "200" {
				t.Errorf("after the window: %s", got)
			}
		})
	}
}
