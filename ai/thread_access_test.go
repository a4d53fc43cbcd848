package ai_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Who may read or follow a thread: its owner (the principal who started its first run)
// and operators of its tenant. Anyone else gets the same 404 as for a thread that does
// not exist; a caller without credentials gets 401.
func TestThreadAccessRules(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	thread, _ := apFinishedRun(t, e) // the input names no thread: the first run's id is the thread's
	cases := []struct {
		name     string
		user     string
		operator bool
		status   int
		code     string
	}{
		{"owner", apAlice, false, 200, ""},
		{"operator of the tenant", "olga@acme", true, 200, ""},
		{"other user of the tenant", "bob@acme", false, 404, "NotFound"},
		{"same user id, other tenant", "alice@globex", false, 404, "NotFound"},
		{"operator of another tenant", "olga@globex", true, 404, "NotFound"},
		{"anonymous", "", false, 401, "Unauthorized"},
	}
	for _, route := range []string{"/messages", "/events"} {
		for _, c := range cases {
			res, body := e.getThread(t, "/agent/threads/"+thread+route, c.user, c.operator)
			if res.StatusCode != c.status {
				t.Errorf("%s %s: HTTP %d %s, want %d", route, c.name, res.StatusCode, body, c.status)
				continue
			}
			if c.code != "" && !strings.Contains(body, `"code":"`+c.code+`"`) {
				t.Errorf("%s %s: body %s, want code %s", route, c.name, body, c.code)
			}
			if c.status == 200 && route == "/messages" && !strings.Contains(body, `"role":"tool"`) {
				t.Errorf("%s %s: body %s, want the conversation", route, c.name, body)
			}
			if c.status == 200 && route == "/events" && !strings.Contains(body, `"RUN_STARTED"`) {
				t.Errorf("%s %s: body %s, want the thread's runs", route, c.name, body)
			}
		}
		// A 404 for a thread that exists reads exactly like one for a thread that does not.
		_, other := e.getThread(t, "/agent/threads/"+thread+route, "bob@acme", false)
		_, unknown := e.getThread(t, "/agent/threads/nope"+route, "bob@acme", false)
		if route == "/messages" && strings.ReplaceAll(other, thread, "X") != strings.ReplaceAll(unknown, "nope", "X") {
			t.Errorf("a hidden thread answers %s, an unknown one %s", other, unknown)
		}
	}
}

// getThread reads a thread route as user. A stream that stays open is read for a
// moment: what it sent by then is the body.
func (e *apEnv) getThread(t *testing.T, path, user string, operator bool) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.Header.Set(apUserHeader, user)
	}
	if operator {
		req.Header.Set(apOperatorHeader, "1")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		time.AfterFunc(300*time.Millisecond, cancel) // a thread's stream stays open
	}
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}
