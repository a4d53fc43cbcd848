package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// With QUICKSTART_OPS_PASSWORD the quickstart serves the console: ops signs in with it
// and reads the flows; without a token the console's API answers 401.
func TestQuickstartConsole(t *testing.T) {
	srv := serve(t, "a long demo password")

	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("/_engine/console/", ""); code != http.StatusOK {
		t.Fatalf("the console page: HTTP %d", code)
	}
	if code, body := get("/_engine/console/api/flows", ""); code != http.StatusUnauthorized || strings.Contains(body, "greeter") {
		t.Fatalf("flows without a token: HTTP %d %s", code, body)
	}
	res, err := http.Post(srv.URL+"/_engine/auth/signInEmail", "application/json",
		strings.NewReader(`{"email":"ops@example.com","password":"a long demo password"}`))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Data struct {
			AccessToken string `json:"accessToken"`
		} `json:"data"`
	}
	err = json.NewDecoder(res.Body).Decode(&env)
	res.Body.Close()
	if err != nil || env.Data.AccessToken == "" {
		t.Fatalf("sign in: HTTP %d %v", res.StatusCode, err)
	}
	if code, body := get("/_engine/console/api/flows", env.Data.AccessToken); code != http.StatusOK || !strings.Contains(body, "greeter.divide") {
		t.Fatalf("flows as ops: HTTP %d %s", code, body)
	}
}
