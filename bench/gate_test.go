package bench_test

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/sqlitedialect"
	_ "modernc.org/sqlite"
)

type gateIn struct {
	N int `json:"n"`
}

type gateOut struct {
	N int `json:"n"`
}

var (
	gateUnit   = engine.NewUnit("bench")
	gatedFlow  = engine.Define[gateIn, gateOut](gateUnit, "gated")
	publicFlow = engine.Define[gateIn, gateOut](gateUnit, "public", engine.Public())
)

// BenchmarkGateOverhead calls the same handler as a public flow and as a gated one
// (bearer JWT check, a scope, and a generous in-memory rate limit keyed by principal),
// alternating in one run over loopback HTTP, and reports gated throughput as a fraction
// of public throughput ("gated/public"; target ≥ 0.9).
func BenchmarkGateOverhead(b *testing.B) {
	sqldb, err := sql.Open("sqlite", "file:bench-gate?mode=memory&cache=shared")
	if err != nil {
		b.Fatal(err)
	}
	db := bun.NewDB(sqldb, sqlitedialect.New())
	defer db.Close()
	auth, err := gate.NewAuth(gate.AuthConfig{DB: db, Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret("bench key bench key bench key bench key")}}, Hash: gate.FastHashParams})
	if err != nil {
		b.Fatal(err)
	}
	lim, err := gate.NewMemoryLimiter(gate.Limit{Events: 1_000_000_000, Per: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	h := func(_ *engine.Fx, in gateIn) (gateOut, error) { return gateOut(in), nil }
	app, err := engine.New(
		engine.WithAuthenticator(auth),
		engine.Bind(publicFlow, h),
		engine.Bind(gatedFlow, h, gate.RateLimit(lim, gate.ByPrincipal()), gate.Scopes("bench")),
	)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := auth.AccessToken(engine.Principal{ID: "u1", Email: "u@example.com", Tenant: "t", Scopes: []string{"bench"}})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	body := []byte(`{"n":7}`)
	call := func(path, bearer string) {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, srv.URL+path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s: status %d", path, resp.StatusCode)
		}
	}
	for range 200 { // warm the connection pool and caches
		call("/_engine/bench/public", "")
		call("/_engine/bench/gated", tok)
	}
	var public, gated time.Duration
	for b.Loop() {
		t0 := time.Now()
		call("/_engine/bench/public", "")
		t1 := time.Now()
		call("/_engine/bench/gated", tok)
		t2 := time.Now()
		public += t1.Sub(t0)
		gated += t2.Sub(t1)
	}
	n := float64(b.N)
	b.ReportMetric(float64(public.Nanoseconds())/n, "public-ns/call")
	b.ReportMetric(float64(gated.Nanoseconds())/n, "gated-ns/call")
	b.ReportMetric(float64(public)/float64(gated), "gated/public")
}
