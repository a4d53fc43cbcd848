// Package client_test runs the TypeScript client's own tests (package.json in this
// directory) against a real process of the reference app, examples/conformance, with a
// fake model: the type tests over declarations generated from the running app, the
// node:test suites, the size budget and, when a Chromium is installed, the browser test.
package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/internal/testenv"
	"github.com/bbc28f59/engine/internal/tsgen"
)

func TestTypeScriptClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the TypeScript client's tests need Node 20 or later (CI installs it)")
	}
	if testing.Short() {
		t.Skip("-short: the TypeScript client's tests build and start the reference app")
	}
	if _, err := os.Stat("node_modules"); err != nil {
		run(t, nil, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	}
	run(t, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")

	model := fakeModel(t)
	url := startApp(t, model)
	// A second instance whose access tokens last a second, for the tests of what an
	// expired token gets (test/expiry.test.mjs).
	shortTokens := startApp(t, model, "ENGINE_ACCESS_TTL=1s")
	checkDescriptor(t, url)
	gen := filepath.Join("test", "gen")
	if err := tsgen.Add(context.Background(), http.DefaultClient, url, gen, os.Stderr); err != nil {
		t.Fatal(err)
	}
	env := []string{"ENGINE_URL=" + url, "ENGINE_SHORT_TOKENS_URL=" + shortTokens}
	t.Run("types", func(t *testing.T) { run(t, env, "node", "node_modules/typescript/bin/tsc", "-p", "test/tsconfig.json") })
	t.Run("node", func(t *testing.T) { run(t, env, "node", "--test", "--test-concurrency=1", "test/") })
	t.Run("size", func(t *testing.T) { run(t, env, "node", "scripts/size.mjs") })
	t.Run("browser", func(t *testing.T) {
		chrome := chromium()
		if chrome == "" {
			if os.Getenv("CI") == "true" {
				t.Fatal("no Chromium found (CHROME_PATH, /usr/bin/chromium, chromium or chromium-browser on PATH): CI must install Debian's chromium (.ci/run does)")
			}
			t.Skip("no Chromium found (CHROME_PATH, /usr/bin/chromium, chromium or chromium-browser on PATH): the browser test needs one; apt-get install chromium")
		}
		run(t, nil, "node", "node_modules/typescript/bin/tsc", "-p", "browser/tsconfig.json")
		run(t, append(env, "CHROME_PATH="+chrome, "ARTIFACTS_DIR=artifacts"), "node", "browser/run.mjs")
		t.Logf("screenshots in %s", filepath.Join("client", "artifacts"))
	})
}

// chromium finds the browser for the browser test: CHROME_PATH, else Debian's chromium.
func chromium() string {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

func run(t *testing.T, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

// checkDescriptor holds the generator's golden input to what the app serves, so the
// golden declarations cannot drift from the reference app.
func checkDescriptor(t *testing.T, url string) {
	t.Helper()
	res, err := http.Get(url + tsgen.DescriptorPath)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var live, golden any
	if err := json.NewDecoder(res.Body).Decode(&live); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("..", "internal", "tsgen", "testdata", "conformance.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &golden); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live, golden) {
		t.Errorf("the reference app's descriptor changed: save GET %s%s as internal/tsgen/testdata/conformance.json and run go test ./internal/tsgen -update", url, tsgen.DescriptorPath)
	}
}

// fakeModel scripts the assistant by the conversation's first user message: a plain
// reply, or a transfer that needs approval followed by a reply once it ran.
func fakeModel(t *testing.T) string {
	srv := openaitest.NewServerFunc(func(req openaitest.Request) openaitest.Turn {
		first, steps := "", 0
		for _, m := range req.Messages {
			if m.Role == "user" && first == "" {
				first = m.Text()
			}
			if m.Role == "assistant" {
				steps++
			}
		}
		switch {
		case strings.Contains(first, "transfer") && steps == 0:
			return openaitest.Turn{ToolCalls: []openaitest.ToolCall{{ID: "call_t", Name: "tools_transfer", Arguments: `{"to":"bob","amount":500}`}}}
		case strings.Contains(first, "transfer"):
			return openaitest.Turn{Text: "Transferred 500 to bob."}
		case strings.Contains(first, "slow"):
			return openaitest.Turn{Text: "one two three four five six seven eight nine ten", Delay: 40 * time.Millisecond}
		}
		return openaitest.Turn{Text: "Hello there, from the assistant."}
	})
	t.Cleanup(srv.Close)
	return srv.URL()
}

// startApp starts a process of the reference app on a database of its own, talking to
// the fake model, with env added to its environment.
func startApp(t *testing.T, model string, env ...string) string {
	t.Helper()
	bin := testenv.Build(t, "../examples/conformance")
	return testenv.StartProcess(t, bin, testenv.ProcessOptions{Ready: 90 * time.Second, Env: append([]string{
		"ENGINE_JOURNAL=sqlite:" + filepath.Join(t.TempDir(), "app.db"),
		"ENGINE_MODEL_BASE_URL=" + model,
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_JWT_KEY=typescript-client-test-key-0123456789abcdef",
	}, env...)}).URL
}
