package ai_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/agui"
	"github.com/bbc28f59/engine/clientx"
	"github.com/bbc28f59/engine/clientx/agent"
)

// apCuttingProxy forwards follow requests to upstream and drops every connection after
// cutEvery event frames: abruptly (the body is cut, the client reads an unexpected EOF)
// or cleanly (the body ends as if the server had finished).
type apCuttingProxy struct {
	upstream string
	cutEvery int
	abrupt   bool

	mu          sync.Mutex
	lastEventID []string // the Last-Event-ID of every request, in order
}

func (p *apCuttingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.lastEventID = append(p.lastEventID, r.Header.Get("Last-Event-ID"))
	p.mu.Unlock()
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(res.StatusCode)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	br := bufio.NewReader(res.Body)
	frames, hasData := 0, false
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if _, werr := w.Write([]byte(line)); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(line, "data:"):
			hasData = true
		case line == "\n" && hasData:
			hasData = false
			frames++
			_ = rc.Flush()
			if frames == p.cutEvery {
				if p.abrupt {
					panic(http.ErrAbortHandler)
				}
				return
			}
		}
	}
}

// apProxyClient is a client of the app behind the proxy at url, as alice.
func apProxyClient(t *testing.T, url string) *clientx.Client {
	t.Helper()
	c, err := clientx.New(url, clientx.WithHeaders(apHeaders(apAlice)))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (p *apCuttingProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lastEventID...)
}

// agent.Follow through a proxy that drops the connection every few frames yields every
// event of a finished run exactly once, resuming with Last-Event-ID each time.
func TestFollowClientReconnectsAfterDrops(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	stream, all := apFinishedRun(t, e)
	for _, abrupt := range []bool{true, false} {
		name := map[bool]string{true: "abrupt", false: "clean"}[abrupt]
		t.Run(name, func(t *testing.T) {
			p := &apCuttingProxy{upstream: e.srv.URL, cutEvery: 3, abrupt: abrupt}
			proxy := httptest.NewServer(p)
			defer proxy.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			var got []agent.Frame
			for f, err := range agent.Follow(ctx, apProxyClient(t, proxy.URL), stream, agent.FollowOptions{Backoff: 5 * time.Millisecond}) {
				if err != nil {
					t.Fatalf("Follow: %v after seqs %v", err, apSeqs(got))
				}
				got = append(got, f)
			}
			if len(got) != len(all) {
				t.Fatalf("Follow yielded %d frames, want %d: seqs %v", len(got), len(all), apSeqs(got))
			}
			apCheckSeqs(t, got, 1)
			reqs := p.requests()
			if want := (len(all) + 2) / 3; len(reqs) < want {
				t.Fatalf("%d connections, want at least %d", len(reqs), want)
			}
			for i, id := range reqs[1:] {
				if want := (i + 1) * 3; id != strconv.Itoa(want) {
					t.Fatalf("reconnect %d sent Last-Event-ID %q, want %d (all: %q)", i+1, id, want, reqs)
				}
			}
		})
	}
}

// agent.Follow connected before the decision follows through the interrupt and the
// resumed run while the connection keeps dropping, ending after the final RUN_FINISHED.
func TestFollowClientLiveAcrossInterruptWithDrops(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	_, stream, in := e.parkedRun(t)
	p := &apCuttingProxy{upstream: e.srv.URL, cutEvery: 4, abrupt: true}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []agent.Frame
	approved := false
	for f, err := range agent.Follow(ctx, apProxyClient(t, proxy.URL), stream, agent.FollowOptions{Backoff: 5 * time.Millisecond}) {
		if err != nil {
			t.Fatalf("Follow: %v after %v", err, apTypes(got))
		}
		got = append(got, f)
		if rf, ok := f.Event.(agui.RunFinished); ok && rf.Outcome != nil && !approved {
			approved = true
			if err := agent.Approve(ctx, e.client(t, apAlice), in.ID, nil); err != nil {
				t.Fatalf("Approve: %v", err)
			}
		}
	}
	apCheckSeqs(t, got, 1)
	last, ok := got[len(got)-1].Event.(agui.RunFinished)
	if !approved || !ok || last.Outcome != nil {
		t.Fatalf("Follow ended with %v", apTypes(got))
	}
	if n := len(e.Transfers()); n != 1 {
		t.Fatalf("transfers ran %d times", n)
	}
}
