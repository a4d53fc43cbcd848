package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
)

var fxUnit = engine.NewUnit("fxinfo")

type fxInfo struct {
	Header string `json:"header"`
	Tenant string `json:"tenant"`
	HasReq bool   `json:"hasReq"`
}

var fxInfoFlow = engine.Define[struct{}, fxInfo](fxUnit, "info", engine.POST("/fxinfo"), engine.Public())

// tenantAuth makes every caller with "Bearer t" a principal of tenant acme.
type tenantAuth struct{}

func (tenantAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	if r.Header.Get("Authorization") == "Bearer t" {
		return &engine.Principal{ID: "u", Tenant: "acme"}, nil
	}
	return nil, nil
}

// Fx.Header and Fx.Tenant read the request and the caller, and are empty without them.
func TestFxHeaderAndTenant(t *testing.T) {
	t.Parallel()
	app, err := engine.New(engine.WithLogger(discardLogger()), engine.WithAuthenticator(tenantAuth{}),
		engine.Bind(fxInfoFlow, func(fx *engine.Fx, _ struct{}) (fxInfo, error) {
			return fxInfo{Header: fx.Header("X-Probe"), Tenant: fx.Tenant(), HasReq: fx.Request() != nil}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(app.Handler())
	t.Cleanup(srv.Close)
	call := func(auth string) fxInfo {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/fxinfo", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Probe", "probe-value")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var env struct{ Data fxInfo }
		if err := json.Unmarshal(b, &env); err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("reply %d %s (%v)", res.StatusCode, b, err)
		}
		return env.Data
	}
	if got := call("Bearer t"); got != (fxInfo{Header: "probe-value", Tenant: "acme", HasReq: true}) {
		t.Fatalf("signed-in call saw %+v", got)
	}
	if got := call(""); got != (fxInfo{Header: "probe-value", HasReq: true}) {
		t.Fatalf("anonymous call saw %+v", got)
	}
	// Invoked without a request: no header, and the principal's tenant.
	out, err := app.Invoke(context.Background(), fxInfoFlow.ID(), &engine.Principal{ID: "s", Tenant: "beta"}, json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var got fxInfo
	if err := json.Unmarshal(out, &got); err != nil || got != (fxInfo{Tenant: "beta"}) {
		t.Fatalf("invoked call saw %s (%v)", out, err)
	}
}
