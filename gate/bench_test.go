package gate_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/gate"
	"github.com/bbc28f59/engine/vault"
)

// BenchmarkAuthenticate measures the per-request token check: "first" verifies a token
// never seen (JWT parse, HMAC, claims), "repeat" a token already verified.
func BenchmarkAuthenticate(b *testing.B) {
	a, err := gate.NewAuth(gate.AuthConfig{DB: benchDB(b), Keys: gate.Keys{Current: gate.Key{Secret: vault.NewSecret(testKey)}}, Hash: gate.FastHashParams})
	if err != nil {
		b.Fatal(err)
	}
	req := func(tok string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		return r
	}
	b.Run("first", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			b.StopTimer()
			i++
			tok, err := a.AccessToken(engine.Principal{ID: fmt.Sprint("u", i), Scopes: []string{"x"}})
			if err != nil {
				b.Fatal(err)
			}
			r := req(tok)
			b.StartTimer()
			if _, err := a.Authenticate(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("repeat", func(b *testing.B) {
		tok, _ := a.AccessToken(engine.Principal{ID: "u", Scopes: []string{"x"}})
		r := req(tok)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Authenticate(r); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMemoryLimiter(b *testing.B) {
	lim, err := gate.NewMemoryLimiter(gate.Limit{Events: 1_000_000_000, Per: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = lim.Allow(ctx, "bench.gated|principal:u1")
	}
}
