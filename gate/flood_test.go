package gate_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbc28f59/engine/gate"
)

// envelopeProblem says what is wrong with body as the envelope of status, or "" when
// nothing is: an error with a code for 4xx and 5xx, data otherwise, nothing at all for
// 204.
func envelopeProblem(status int, body []byte) string {
	if status == http.StatusNoContent {
		if len(body) != 0 {
			return fmt.Sprintf("204 with a body: %q", body)
		}
		return ""
	}
	var env struct {
		Data  json.RawMessage `json:"data"`
		Error *struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Sprintf("%d: not an envelope: %q", status, body)
	}
	switch {
	case status >= 400:
		if env.Error == nil || env.Error.Code == "" {
			return fmt.Sprintf("%d without an error code: %s", status, body)
		}
	case env.Error != nil || env.Data == nil:
		return fmt.Sprintf("%d without data: %s", status, body)
	}
	return ""
}

// FuzzAuthRoutes sends arbitrary bodies to the auth routes (sign-in, sign-up, refresh,
// sign-out, over REST and RPC) through the app's real handler: whatever arrives, the
// answer is an envelope below 500, and it comes; a call still unanswered after 30 s (the
// bound APP.md gives sign-ins under load, for one call on an idle app) is reported as a
// hang with its input.
func FuzzAuthRoutes(f *testing.F) {
	h := setup(f, noLimits, func(c *gate.AuthConfig) { c.PublicSignUp = true })
	access, err := h.auth.AccessToken(h.principal(f, "bob@example.com"))
	if err != nil {
		f.Fatal(err)
	}
	refresh := h.signIn(f, "bob@example.com").RefreshToken
	routes := []struct{ path, token string }{
		{"/auth/sign-in/email", ""},
		{"/auth/sign-up/email", ""},
		{"/auth/refresh", ""},
		{"/auth/sign-out", access},
		{"/_engine/auth/signInEmail", ""},
		{"/_engine/auth/signUpEmail", ""},
		{"/_engine/auth/refresh", ""},
		{"/_engine/auth/signOut", access},
	}
	for _, body := range []string{
		signInBody("alice@example.com", pw), signInBody("alice@example.com", "wrong"), signInBody("", ""),
		signInBody("new@example.com", "long enough pw"), signInBody("Alice <alice@example.com>", pw),
		signInBody(strings.Repeat("a", 300)+"@example.com", pw), signInBody("x@example.com", strings.Repeat("p", 2000)),
		`{"email":"ALICE@example.com ","password":"` + pw + `"}`, `{"email":1,"password":true}`,
		`{"refreshToken":"` + refresh + `"}`, `{"refreshToken":"x"}`, `{"refreshToken":""}`, `{"refreshToken":null}`,
		`{"refreshToken":7}`, `{}`, `null`, `[]`, `"x"`, ``, `{`, `{"email":"a@b.c","password":"p","extra":1}`,
		`{"email":"\u0000","password":"\ud800"}`, "{\"email\":\"\xff\"}",
		`{"email":"a@b.c","password":"p"} trailing`, `{"email":"a@b.c","email":"d@e.f","password":"p"}`,
		strings.Repeat(`[`, 10000), `{"email":` + strings.Repeat(`{"a":`, 1000) + `1` + strings.Repeat(`}`, 1000) + `}`,
	} {
		for r := range routes {
			f.Add(uint8(r), body)
		}
	}
	handler := h.app.Handler()
	f.Fuzz(func(t *testing.T, route uint8, body string) {
		r := routes[int(route)%len(routes)]
		req := httptest.NewRequest(http.MethodPost, r.path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if r.token != "" {
			req.Header.Set("Authorization", "Bearer "+r.token)
		}
		w := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			defer close(done)
			handler.ServeHTTP(w, req)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s %q: no answer within 30 s", r.path, body)
		}
		if p := envelopeProblem(w.Code, w.Body.Bytes()); p != "" {
			t.Fatalf("%s %q: %s", r.path, body, p)
		}
		if w.Code >= 500 {
			t.Fatalf("%s %q: %d %s", r.path, body, w.Code, w.Body.Bytes()) // no input may make the auth routes fail
		}
	})
}

// 200 parallel sign-ins at full argon2id cost over real HTTP are all answered, each
// with an envelope of 401, 429 or 503, and none hangs: the client gives each 30 s.
func TestParallelSignInsAreAnswered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  func(*gate.AuthConfig)
	}{
		{"default limits", func(*gate.AuthConfig) {}},
		{"no sign-in limits", noLimits}, // every attempt reaches the hashing bound
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setup(t, tc.cfg, func(c *gate.AuthConfig) { c.Hash = gate.DefaultHashParams })
			client := &http.Client{Timeout: 30 * time.Second}
			var mu sync.Mutex
			counts := map[int]int{}
			var wg sync.WaitGroup
			for i := range 200 {
				email := fmt.Sprintf("flood%d@example.com", i)
				if i%2 == 0 {
					email = "alice@example.com"
				}
				wg.Go(func() {
					resp, err := client.Post(h.srv.URL+signInPath, "application/json", strings.NewReader(signInBody(email, "wrong password")))
					if err != nil {
						t.Errorf("sign-in %d: %v", i, err)
						return
					}
					body, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil {
						t.Errorf("sign-in %d: %v", i, err)
						return
					}
					if p := envelopeProblem(resp.StatusCode, body); p != "" {
						t.Errorf("sign-in %d: %s", i, p)
					}
					mu.Lock()
					counts[resp.StatusCode]++
					mu.Unlock()
				})
			}
			wg.Wait()
			for status := range counts {
				if status != http.StatusUnauthorized && status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable {
					t.Errorf("status %d among the answers %v", status, counts)
				}
			}
			t.Logf("answers: %v", counts)
		})
	}
}
