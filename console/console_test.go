package console_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/bbc28f59/engine/console"
	"github.com/bbc28f59/engine/durable"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/journal"
	"github.com/bbc28f59/engine/journal/drivers/memory"
)

// headerAuth reads "X-As: id,tenant[,operator]".
type headerAuth struct{}

func (headerAuth) Authenticate(r *http.Request) (*engine.Principal, error) {
	v := r.Header.Get("X-As")
	if v == "" {
		return nil, nil
	}
	parts := strings.Split(v, ",")
	return &engine.Principal{ID: parts[0], Email: parts[0] + "@example.com", Tenant: parts[1], Operator: len(parts) > 2 && parts[2] == "operator"}, nil
}

type ShipIn struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
}

type ShipOut struct {
	To     string `json:"to"`
	Amount int    `json:"amount"`
	Note   string `json:"note,omitempty"`
}

var (
	orders = engine.NewUnit("orders")
	// Ship parks for a decision shaped like an agent's tool call (package ai): the
	// payload names the tool (orders.transfer) and its arguments.
	Ship     = engine.Define[ShipIn, ShipOut](orders, "ship", engine.Durable())
	Transfer = engine.Define[ShipIn, ShipOut](orders, "transfer")
)

type setup struct {
	srv *httptest.Server
	j   *journal.Journal
	drv journal.Driver
}

// eachJournal runs fn on an app over each of the three journal drivers.
func eachJournal(t *testing.T, fn func(t *testing.T, s *setup)) {
	for _, kind := range []string{"memory", "sqlite", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var drv journal.Driver = memory.New()
			switch kind {
			case "sqlite":
				drv, _ = testenv.SQLiteJournal(t)
			case "postgres":
				dsn := testenv.PostgresDSN(t, "the console's cases on Postgres")
				drv, _ = testenv.PostgresJournal(t, dsn, "console_"+testenv.RandomHex(5)+"_", true)
			}
			fn(t, newSetupOn(t, drv))
		})
	}
}

func newSetup(t *testing.T) *setup {
	t.Helper()
	return newSetupOn(t, memory.New())
}

func newSetupOn(t *testing.T, drv journal.Driver) *setup {
	t.Helper()
	j, err := journal.New(drv, journal.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := testenv.Serve(t, durable.With(j), engine.WithAuthenticator(headerAuth{}), console.Serve(console.Options{}),
		engine.Bind(Transfer, func(_ *engine.Fx, in ShipIn) (ShipOut, error) { return ShipOut{To: in.To, Amount: in.Amount}, nil }),
		engine.Bind(Ship, func(fx *engine.Fx, in ShipIn) (ShipOut, error) {
			if in.Amount <= 100 {
				return ShipOut{To: in.To, Amount: in.Amount}, nil
			}
			d, err := durable.Park(fx, "call-1", time.Now().Add(time.Hour), map[string]any{"tool": "orders.transfer", "args": in})
			if err != nil {
				return ShipOut{}, err
			}
			var p struct {
				Args   *ShipIn `json:"args"`
				Reason string  `json:"reason"`
			}
			_ = json.Unmarshal(d.Payload, &p)
			if p.Args != nil {
				in = *p.Args
			}
			return ShipOut{To: in.To, Amount: in.Amount, Note: string(d.Kind) + " " + p.Reason}, nil
		}))
	return &setup{srv: srv, j: j, drv: drv}
}

// otherInstance is a second journal on the same storage, as another instance of the app.
func (s *setup) otherInstance(t *testing.T) *journal.Journal {
	t.Helper()
	other, err := journal.New(s.drv, journal.Options{Owner: "other"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close(context.Background()) })
	return other
}

// do sends a request as who ("" for nobody) and returns the status and body.
func (s *setup) do(t *testing.T, who, method, path, body string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("X-As", who)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(b)
}

// data decodes the data of a success envelope into v.
func (s *setup) data(t *testing.T, who, method, path, body string, v any) {
	t.Helper()
	code, _, b := s.do(t, who, method, path, body)
	if code != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d %s", method, path, code, b)
	}
	var env struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(b), &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env.Data, v); err != nil {
		t.Fatalf("%s %s: %v in %s", method, path, err, b)
	}
}

const ops = "op,acme,operator"

func (s *setup) park(t *testing.T, who string, amount int) string {
	t.Helper()
	code, _, b := s.do(t, who, "POST", "/_engine/orders/ship", fmt.Sprintf(`{"to":"bob","amount":%d}`, amount))
	var env struct {
		Meta struct {
			Parked bool   `json:"parked"`
			RunID  string `json:"runId"`
		} `json:"meta"`
	}
	if err := json.Unmarshal([]byte(b), &env); err != nil || code != http.StatusAccepted || !env.Meta.Parked {
		t.Fatalf("ship did not park: HTTP %d %s", code, b)
	}
	return env.Meta.RunID
}

// Only operators get data: without credentials 401, anyone else 403, and neither
// answer names a flow; the page and its assets hold no data of the app.
func TestOnlyOperatorsGetData(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	s.park(t, "u1,acme", 500)
	routes := []struct{ method, path, body string }{
		{"GET", "/_engine/console/api/me", ""}, {"GET", "/_engine/console/api/flows", ""},
		{"GET", "/_engine/console/api/runs", ""}, {"GET", "/_engine/console/api/runs/x", ""},
		{"GET", "/_engine/console/api/streams/x/events", ""}, {"GET", "/_engine/console/api/approvals", ""},
		{"POST", "/_engine/console/api/approvals/decide", `{"runId":"x","key":"y","decision":"approve"}`},
		{"GET", "/_engine/console/api/health", ""},
	}
	for _, r := range routes {
		for who, want := range map[string]int{"": http.StatusUnauthorized, "u1,acme": http.StatusForbidden} {
			code, h, body := s.do(t, who, r.method, r.path, r.body)
			if code != want || strings.Contains(body, "orders") || h.Get("Content-Security-Policy") != console.CSP {
				t.Errorf("%s %s as %q: HTTP %d %s (CSP %q), want %d and no data", r.method, r.path, who, code, body, h.Get("Content-Security-Policy"), want)
			}
		}
	}
	for _, p := range []string{"/_engine/console", "/_engine/console/"} {
		code, h, body := s.do(t, "", "GET", p, "")
		if code != http.StatusOK || strings.Contains(body, "orders") || !strings.Contains(body, "<form") && !strings.Contains(body, "type=\"module\"") {
			t.Fatalf("GET %s: HTTP %d %s", p, code, body)
		}
		if h.Get("Content-Security-Policy") != console.CSP || h.Get("Cache-Control") != "no-cache" {
			t.Fatalf("GET %s headers %v", p, h)
		}
	}
}

// Assets are named by their content's hash and cached for a year; the page names them.
func TestAssetsAreHashedAndCachedForever(t *testing.T) {
	t.Parallel()
	s := newSetup(t)
	_, _, page := s.do(t, "", "GET", "/_engine/console/", "")
	n := 0
	for name, body := range console.Assets() {
		if name == "index.html" {
			continue
		}
		n++
		if strings.Count(name, ".") != 2 {
			t.Errorf("asset %s has no hash in its name", name)
		}
		code, h, got := s.do(t, "", "GET", "/_engine/console/assets/"+name, "")
		if code != http.StatusOK || got != string(body) || h.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
			h.Get("Content-Security-Policy") != console.CSP {
			t.Errorf("asset %s: HTTP %d, cache %q", name, code, h.Get("Cache-Control"))
		}
		if strings.HasPrefix(name, "app.") || strings.HasPrefix(name, "style.") {
			if !strings.Contains(page, "/_engine/console/assets/"+name) {
				t.Errorf("the page does not name %s", name)
			}
		}
		if strings.HasSuffix(name, ".js") && strings.Contains(got, `from "./api.js"`) {
			t.Errorf("%s imports a module by its plain name", name)
		}
	}
	if n < 5 {
		t.Fatalf("%d assets", n)
	}
	if code, _, _ := s.do(t, "", "GET", "/_engine/console/assets/app.000000000000.js", ""); code != http.StatusNotFound {
		t.Fatalf("an unknown asset: HTTP %d", code)
	}
}

// The runs list pages newest first and filters; a run shows its steps and parks.
func TestRunsAndOneRun(t *testing.T) {
	t.Parallel()
	eachJournal(t, func(t *testing.T, s *setup) {
		parked := s.park(t, "u1,acme", 500)
		for i := range 3 {
			if code, _, b := s.do(t, "u2,beta", "POST", "/_engine/orders/ship", fmt.Sprintf(`{"to":"x","amount":%d}`, i)); code != http.StatusOK {
				t.Fatalf("ship: %d %s", code, b)
			}
		}
		type page struct {
			Runs []struct {
				ID, Flow, Status, Tenant, Principal string
			}
			NextCursor string
		}
		var all page
		s.data(t, ops, "GET", "/_engine/console/api/runs", "", &all)
		if len(all.Runs) != 4 || all.Runs[3].ID != parked || all.Runs[3].Status != "parked" || all.Runs[3].Principal != "u1@example.com" || all.NextCursor != "" {
			t.Fatalf("runs = %+v", all)
		}
		var p1, p2 page
		s.data(t, ops, "GET", "/_engine/console/api/runs?limit=2", "", &p1)
		s.data(t, ops, "GET", "/_engine/console/api/runs?limit=2&cursor="+p1.NextCursor, "", &p2)
		if len(p1.Runs) != 2 || len(p2.Runs) != 2 || p1.Runs[0].ID != all.Runs[0].ID || p2.Runs[1].ID != parked {
			t.Fatalf("pages %+v then %+v", p1, p2)
		}
		var f page
		s.data(t, ops, "GET", "/_engine/console/api/runs?status=completed&tenant=beta", "", &f)
		if len(f.Runs) != 3 || f.Runs[0].Tenant != "beta" {
			t.Fatalf("completed runs of beta = %+v", f)
		}
		for _, bad := range []string{"cursor=nope", "cursor=e30", "limit=0", "limit=x"} {
			if code, _, b := s.do(t, ops, "GET", "/_engine/console/api/runs?"+bad, ""); code != http.StatusBadRequest || !strings.Contains(b, "ValidationError") {
				t.Errorf("runs?%s: HTTP %d %s", bad, code, b)
			}
		}
		var one struct {
			Run   struct{ Status string }
			Parks []struct {
				Key      string
				Deadline time.Time
				Decision *journal.Decision
			}
			Steps   []struct{ Name string }
			Streams []any
		}
		s.data(t, ops, "GET", "/_engine/console/api/runs/"+parked, "", &one)
		if one.Run.Status != "parked" || len(one.Parks) != 1 || one.Parks[0].Key != "call-1" || one.Parks[0].Decision != nil || one.Parks[0].Deadline.IsZero() {
			t.Fatalf("run = %+v", one)
		}
		if code, _, b := s.do(t, ops, "GET", "/_engine/console/api/runs/nope", ""); code != http.StatusNotFound {
			t.Fatalf("an unknown run: %d %s", code, b)
		}
	})
}

// An operator approves with edited arguments, checked against the tool's input schema
// first; a second decision is Conflict; another tenant's approvals are not listed.
func TestApprovalsDecideThroughTheDurablePath(t *testing.T) {
	t.Parallel()
	eachJournal(t, func(t *testing.T, s *setup) {
		id := s.park(t, "u1,acme", 500)
		other := s.park(t, "u3,beta", 700)
		var list struct {
			Approvals []struct {
				RunID, Key, Flow, Tool string
				Args                   json.RawMessage
				Schema                 map[string]any
			}
		}
		s.data(t, ops, "GET", "/_engine/console/api/approvals", "", &list)
		if len(list.Approvals) != 1 || list.Approvals[0].RunID != id || list.Approvals[0].Tool != "orders.transfer" ||
			list.Approvals[0].Flow != "orders.ship" || list.Approvals[0].Schema["properties"] == nil || !strings.Contains(string(list.Approvals[0].Args), `"amount":500`) {
			t.Fatalf("approvals = %+v", list)
		}
		decide := func(body string) (int, string) {
			code, _, b := s.do(t, ops, "POST", "/_engine/console/api/approvals/decide", body)
			return code, b
		}
		for _, bad := range []string{`{"runId":"` + id + `","key":"call-1","decision":"approve","args":{"amount":"lots"}}`,
			`{"runId":"` + id + `","key":"call-1","decision":"maybe"}`, `{"runId":"` + id + `"}`, `not json`} {
			if code, b := decide(bad); code != http.StatusBadRequest {
				t.Fatalf("decide %s: HTTP %d %s", bad, code, b)
			}
		}
		if code, b := decide(`{"runId":"` + other + `","key":"call-1","decision":"approve"}`); code != http.StatusNotFound {
			t.Fatalf("another tenant's run: HTTP %d %s", code, b)
		}
		if code, b := decide(`{"runId":"` + id + `","key":"call-1","decision":"approve","args":{"to":"carol","amount":150}}`); code != http.StatusOK {
			t.Fatalf("approve: HTTP %d %s", code, b)
		}
		deadline := time.Now().Add(10 * time.Second)
		var rec journal.RunRecord
		for time.Now().Before(deadline) {
			rec, _ = s.j.GetRun(t.Context(), id)
			if rec.Status.Final() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if rec.Status != journal.StatusCompleted || !strings.Contains(string(rec.Output), `"to":"carol","amount":150`) {
			t.Fatalf("run after approval: %s %s", rec.Status, rec.Output)
		}
		if code, b := decide(`{"runId":"` + id + `","key":"call-1","decision":"deny","reason":"late"}`); code != http.StatusConflict {
			t.Fatalf("a second decision: HTTP %d %s", code, b)
		}
		s.data(t, ops, "GET", "/_engine/console/api/approvals", "", &list)
		if len(list.Approvals) != 0 {
			t.Fatalf("approvals after the decision = %+v", list)
		}

		// A denial carries its reason to the handler.
		denied := s.park(t, "u1,acme", 900)
		if code, b := decide(`{"runId":"` + denied + `","key":"call-1","decision":"deny","reason":"too much"}`); code != http.StatusOK {
			t.Fatalf("deny: HTTP %d %s", code, b)
		}
		for time.Now().Before(deadline) {
			if rec, _ = s.j.GetRun(t.Context(), denied); rec.Status.Final() {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !strings.Contains(string(rec.Output), `"note":"deny too much"`) {
			t.Fatalf("run after the denial: %s %s", rec.Status, rec.Output)
		}
	})
}

// While another instance holds the run, a decision is JournalLeaseBusy with the
// Retry-After the console waits before it tries again; nothing is stored.
func TestADecisionOnABusyRunIsJournalLeaseBusy(t *testing.T) {
	t.Parallel()
	eachJournal(t, func(t *testing.T, s *setup) {
		id := s.park(t, "u1,acme", 500)
		other := s.otherInstance(t)
		if _, err := other.Claim(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		code, h, b := s.do(t, ops, "POST", "/_engine/console/api/approvals/decide", `{"runId":"`+id+`","key":"call-1","decision":"approve"}`)
		if !strings.Contains(b, `"JournalLeaseBusy"`) || h.Get("Retry-After") == "" || code < 400 {
			t.Fatalf("decide on a busy run: HTTP %d %s (Retry-After %q)", code, b, h.Get("Retry-After"))
		}
		parks, err := s.j.ListParks(t.Context(), id)
		if err != nil || len(parks) != 1 || parks[0].Decision != nil {
			t.Fatalf("parks after a busy decision: %+v, %v", parks, err)
		}
	})
}

// Health names the instance, the instances holding runs and the retention.
func TestHealth(t *testing.T) {
	t.Parallel()
	eachJournal(t, func(t *testing.T, s *setup) {
		id := s.park(t, "u1,acme", 500)
		other := s.otherInstance(t)
		if _, err := other.Claim(t.Context(), id); err != nil {
			t.Fatal(err)
		}
		var h struct {
			Journal   bool
			Owner     string
			Retention struct {
				FinishedStreamsMs int64
			}
			Instances []struct {
				Owner string
				Runs  int
			}
			Recoverable []string
			Scheduled   []any
		}
		s.data(t, ops, "GET", "/_engine/console/api/health", "", &h)
		if !h.Journal || h.Owner == "" || h.Retention.FinishedStreamsMs != (24*time.Hour).Milliseconds() || h.Recoverable == nil || h.Scheduled == nil ||
			len(h.Instances) != 1 || h.Instances[0].Owner != "other" || h.Instances[0].Runs != 1 {
			t.Fatalf("health = %+v", h)
		}
	})
}

// The console's assets, page included, weigh at most 20 KiB gzipped (13 KiB when this
// budget was set): the figure is logged, and a change that doubles it fails here.
func TestAssetsBudget(t *testing.T) {
	t.Parallel()
	total := 0
	for name, body := range console.Assets() {
		var b bytes.Buffer
		w, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
		_, _ = w.Write(body)
		_ = w.Close()
		t.Logf("%s: %d bytes, %d gzipped", name, len(body), b.Len())
		total += b.Len()
	}
	t.Logf("total: %d bytes gzipped", total)
	if total > 20<<10 {
		t.Fatalf("the console's assets are %d bytes gzipped, over the budget of 20 KiB", total)
	}
}
