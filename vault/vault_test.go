package vault_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/vault"
)

const plain = "hunter2-very-secret"

func TestSecretRedacts(t *testing.T) {
	t.Parallel()
	s := vault.NewSecret(plain)
	type carrier struct {
		Name string       `json:"name"`
		Key  vault.Secret `json:"key"`
	}
	var logBuf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logBuf, nil))
	logger.Info("loaded", "secret", s, "carrier", carrier{Name: "n", Key: s})
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("loaded", "secret", s)
	js, err := json.Marshal(carrier{Name: "n", Key: s})
	if err != nil {
		t.Fatal(err)
	}
	mapKey, err := json.Marshal(map[vault.Secret]int{s: 1})
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{
		"String": s.String(), "%v": fmt.Sprintf("%v", s), "%+v": fmt.Sprintf("%+v", s),
		"%#v": fmt.Sprintf("%#v", s), "%s": fmt.Sprintf("%s", s), "%q": fmt.Sprintf("%q", s),
		"%x": fmt.Sprintf("%x", s), "struct %+v": fmt.Sprintf("%+v", carrier{Key: s}),
		"struct %#v": fmt.Sprintf("%#v", carrier{Key: s}), "json": string(js), "map key": string(mapKey),
		"slog": logBuf.String(), "errorf": fmt.Errorf("bad key %v", s).Error(),
	} {
		if strings.Contains(out, plain) || strings.Contains(out, fmt.Sprintf("%x", plain)) {
			t.Errorf("%s leaks the secret: %s", name, out)
		}
		if !strings.Contains(out, vault.Redacted) {
			t.Errorf("%s does not say it redacted: %s", name, out)
		}
	}
	if s.Reveal() != plain {
		t.Fatal("Reveal does not return the value")
	}
}

func TestSources(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "FILE_KEY"), []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VAULT_TEST_ENV_KEY", "from-env")
	t.Setenv("VAULT_TEST_FILE_KEY", "env-loses")
	v, err := vault.New(vault.Chain(vault.Files(dir), vault.Env("VAULT_TEST_"), vault.Map{"MAP_KEY": "from-map"}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for name, want := range map[string]string{"FILE_KEY": "from-file", "ENV_KEY": "from-env", "MAP_KEY": "from-map"} {
		s, err := v.Get(ctx, name)
		if err != nil || s.Reveal() != want {
			t.Errorf("%s = %q %v, want %q", name, s.Reveal(), err, want)
		}
	}
	if _, err := v.Get(ctx, "MISSING"); !errors.Is(err, vault.ErrNotFound) {
		t.Errorf("missing: %v", err)
	}
	for _, bad := range []string{"../etc/passwd", "a/b", "", "x..y"} {
		if _, ok, err := vault.Files(dir).Lookup(ctx, bad); ok || err == nil {
			t.Errorf("Files accepted name %q", bad)
		}
	}
	if _, err := vault.New(nil); err == nil {
		t.Error("nil source accepted")
	}
	if _, err := engine.New(vault.With(nil)); err == nil {
		t.Error("engine.New accepted a nil vault")
	}
}

// A handler reads the vault; the value never reaches the reply, the descriptor or logs.
func TestVaultInApp(t *testing.T) {
	t.Parallel()
	v, err := vault.New(vault.Map{"API_KEY": plain})
	if err != nil {
		t.Fatal(err)
	}
	u := engine.NewUnit("v")
	type out struct {
		Length int          `json:"length"`
		Key    vault.Secret `json:"key"` // a mistake: it must still not leak
	}
	f := engine.Define[struct{}, out](u, "use", engine.Public(), engine.POST("/v/use"))
	var logBuf bytes.Buffer
	app, err := engine.New(vault.With(v), engine.WithLogger(slog.New(slog.NewJSONHandler(&logBuf, nil))),
		engine.Bind(f, func(fx *engine.Fx, _ struct{}) (out, error) {
			s, err := vault.Of(fx).Get(fx.Context(), "API_KEY")
			if err != nil {
				return out{}, err
			}
			fx.Logger().Info("using key", "key", s)
			return out{Length: len(s.Reveal()), Key: s}, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	if vault.FromApp(app) != v {
		t.Fatal("FromApp does not return the installed vault")
	}
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()
	for _, req := range []struct{ method, path string }{{"POST", "/v/use"}, {"GET", "/_engine/client.json"}} {
		r, _ := http.NewRequest(req.method, srv.URL+req.path, strings.NewReader(`{}`))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || strings.Contains(string(b), plain) {
			t.Errorf("%s %s: %d %s", req.method, req.path, resp.StatusCode, b)
		}
		if req.path == "/v/use" && !strings.Contains(string(b), `"length":19`) {
			t.Errorf("the handler did not read the secret: %s", b)
		}
	}
	if strings.Contains(logBuf.String(), plain) || !strings.Contains(logBuf.String(), vault.Redacted) {
		t.Errorf("log: %s", logBuf.String())
	}
}
