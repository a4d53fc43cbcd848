package console

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/bbc28f59/engine"
)

// Path is where [Serve] mounts the console by default.
const Path = "/_engine/console"

// Options configure the console.
type Options struct {
	// Path is where the console is served, under /_engine/. Default [Path].
	Path string
	// SignIn is the id of the flow the console signs in with: it takes {email, password}
	// and answers {accessToken}. Default "auth.signInEmail" (package gate).
	SignIn string
	// Refresh is the id of the flow that turns {refreshToken} into a new token set, with
	// which the console renews an expired access token. Default "auth.refresh" (package
	// gate); "-" turns renewal off (the operator signs in again).
	Refresh string
	// SignOut is the id of the flow that ends the session of {refreshToken} when the
	// operator signs out. Default "auth.signOut" (package gate); "-" for none (the console
	// then only forgets its tokens).
	SignOut string
	// TraceURL, when set, links a run's page to its trace: "{runId}" in it is replaced by
	// the run id (for example "https://traces.example.com/search?tag=run.id:{runId}").
	TraceURL string
}

// CSP is the Content-Security-Policy of every response of the console: the app's own
// origin only, no inline script or style, no framing.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

//go:embed ui
var ui embed.FS

// asset is one embedded file under its hashed name.
type asset struct {
	body  []byte
	ctype string
}

// assets maps hashed names ("app.1a2b3c4d5e6f.js") to files; names maps the plain name
// to the hashed one. Both are computed once, from the embedded content.
var assets, names = hashAssets()

// hashAssets names every file of ui but index.html by the first 12 hex digits of the
// SHA-256 of its content, rewriting the imports of ES modules (which name other files
// by their plain names) first, so a module's hash covers what it imports.
func hashAssets() (map[string]asset, map[string]string) {
	files := map[string][]byte{}
	err := fs.WalkDir(ui, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == "ui/index.html" {
			return err
		}
		b, err := ui.ReadFile(p)
		files[strings.TrimPrefix(p, "ui/")] = b
		return err
	})
	if err != nil {
		panic(err) // embedded files: cannot fail
	}
	out, named := map[string]asset{}, map[string]string{}
	// Leaves first: a module that imports another is named after the import is.
	var name func(string) string
	name = func(n string) string {
		if h, ok := named[n]; ok {
			return h
		}
		b := files[n]
		if strings.HasSuffix(n, ".js") {
			for dep := range files {
				if dep != n && strings.HasSuffix(dep, ".js") && bytes.Contains(b, []byte(`"./`+dep+`"`)) {
					b = bytes.ReplaceAll(b, []byte(`"./`+dep+`"`), []byte(`"./`+name(dep)+`"`))
				}
			}
		}
		sum := sha256.Sum256(b)
		ext := path.Ext(n)
		h := strings.TrimSuffix(n, ext) + "." + hex.EncodeToString(sum[:6]) + ext
		named[n] = h
		out[h] = asset{body: b, ctype: contentType(ext)}
		return h
	}
	for n := range files {
		name(n)
	}
	return out, named
}

func contentType(ext string) string {
	switch ext {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	}
	return "application/octet-stream"
}

// Assets returns the console's assets by their hashed names, and the page as
// "index.html", for reports of what the console weighs.
func Assets() map[string][]byte {
	out := map[string][]byte{"index.html": page("/_engine/console", "auth.signInEmail", "auth.refresh", "auth.signOut")}
	for n, a := range assets {
		out[n] = a.body
	}
	return out
}

// page is index.html with the hashed asset names and the console's settings filled in.
func page(base, signIn, refresh, signOut string) []byte {
	b, _ := ui.ReadFile("ui/index.html")
	r := strings.NewReplacer("{{base}}", base, "{{app.js}}", names["app.js"], "{{style.css}}", names["style.css"],
		"{{signIn}}", htmlAttr(signIn), "{{refresh}}", htmlAttr(refresh), "{{signOut}}", htmlAttr(signOut))
	return []byte(r.Replace(string(b)))
}

func htmlAttr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}

// Serve mounts the console at [Options.Path]: the page, its assets and its operator API
// (see the package documentation). It is an [engine.Option]. The app needs an
// authenticator; runs, approvals and health need a journal (durable.With).
func Serve(opts Options) engine.Option {
	if opts.Path == "" {
		opts.Path = Path
	}
	opts.Path = strings.TrimSuffix(opts.Path, "/")
	if !strings.HasPrefix(opts.Path, "/_engine/") || strings.ContainsAny(opts.Path, ":?#") {
		return engine.InvalidOption(fmt.Errorf("console: Serve: path %q must be under /_engine/", opts.Path))
	}
	if opts.SignIn == "" {
		opts.SignIn = "auth.signInEmail"
	}
	opts.Refresh, opts.SignOut = orDefault(opts.Refresh, "auth.refresh"), orDefault(opts.SignOut, "auth.signOut")
	c := &console{opts: opts, page: page(opts.Path, opts.SignIn, opts.Refresh, opts.SignOut)}
	api := opts.Path + "/api"
	return engine.Options(
		engine.Validate(func(app *engine.App) error {
			if !app.HasAuthenticator() {
				return errors.New("console: Serve: the app needs an authenticator (operators sign in)")
			}
			return nil
		}),
		engine.Handle(http.MethodGet, opts.Path, c.servePage),
		engine.Handle(http.MethodGet, opts.Path+"/", c.servePage),
		engine.Handle(http.MethodGet, opts.Path+"/assets/:name", c.serveAsset),
		engine.Handle(http.MethodGet, api+"/me", c.op(c.me)),
		engine.Handle(http.MethodGet, api+"/flows", c.op(c.flows)),
		engine.Handle(http.MethodGet, api+"/runs", c.op(c.runs)),
		engine.Handle(http.MethodGet, api+"/runs/:runId", c.op(c.run)),
		engine.Handle(http.MethodGet, api+"/streams/:streamId/events", c.op(c.events)),
		engine.Handle(http.MethodGet, api+"/approvals", c.op(c.approvals)),
		engine.Handle(http.MethodPost, api+"/approvals/decide", c.op(c.decide)),
		engine.Handle(http.MethodGet, api+"/health", c.op(c.health)),
	)
}

// orDefault is id, def when id is empty, and empty when id is "-" (none).
func orDefault(id, def string) string {
	switch id {
	case "":
		return def
	case "-":
		return ""
	}
	return id
}

// console is one app's console.
type console struct {
	opts Options
	page []byte
}

// secure sets the headers every response of the console carries.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", CSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (c *console) servePage(_ *engine.Fx, w http.ResponseWriter, _ *http.Request) {
	secure(w)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(c.page)
}

func (c *console) serveAsset(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
	a, ok := assets[r.PathValue("name")]
	if !ok {
		engine.WriteError(fx, w, r, engine.NotFound("no asset %s", r.PathValue("name")))
		return
	}
	secure(w)
	w.Header().Set("Content-Type", a.ctype)
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(a.body)
}

// op wraps an API handler: operators only, the answer as an envelope.
func (c *console) op(h func(fx *engine.Fx, r *http.Request) (any, error)) engine.RouteFunc {
	return func(fx *engine.Fx, w http.ResponseWriter, r *http.Request) {
		secure(w)
		w.Header().Set("Cache-Control", "no-store")
		p := fx.Principal()
		if p == nil {
			engine.WriteError(fx, w, r, engine.Unauthorized())
			return
		}
		if !p.Operator {
			engine.WriteError(fx, w, r, engine.Forbidden("operator", "only operators use the console"))
			return
		}
		out, err := h(fx, r)
		if err != nil {
			engine.WriteError(fx, w, r, err)
			return
		}
		engine.WriteData(fx, w, r, out)
	}
}
