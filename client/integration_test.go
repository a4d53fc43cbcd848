// Package client_test runs the TypeScript client's own tests (package.json in this
// directory) against a real process of the reference app, examples/conformance, with a
// fake model: the type tests over declarations generated from the running app, the
// node:test suites, the size budget and, when a Chromium is installed, the browser test.
package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
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
	t.Run("fresh npm project", func(t *testing.T) { freshProject(t, url) })
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
	runIn(t, "", env, name, args...)
}

// runIn runs a command in dir ("" for this directory) and returns its combined output,
// failing the test when it fails.
func runIn(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return string(out)
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
		case strings.Contains(first, "long"): // stopped by the browser test mid-reply
			return openaitest.Turn{Text: strings.Repeat("word ", 200), Delay: 40 * time.Millisecond}
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

// freshMain is the program of the fresh project: typed calls through the declarations
// the app serves, whose types must be live (the @ts-expect-error lines fail the build if
// the calls type as any), and the reply printed.
const freshMain = `import { createClient, isErrorCode } from "engine/client";
import { memorySession } from "engine/client/auth";
import { approve } from "engine/client/agent";
import { app } from "./engine-client.js";

const url = URL_PLACEHOLDER;
const session = memorySession();
const api = createClient(app, url, { auth: { getToken: session.getToken, refresh: (): Promise<void> => session.refresh(api) } });
const sum = await api.math.add({ a: 2, b: 3 });
const div = await api.math.divide({ a: 1, b: 0 });
// @ts-expect-error a is a number
void api.math.add({ a: "2", b: 3 });
// @ts-expect-error the id of an approval is required
void api.agent.approve({});
void approve;
if (isErrorCode(div.error, "DivideByZero")) console.log("sum", sum.data?.sum, "dividend", div.error.data.dividend);
`

// freshProject checks that the client package works in a new npm project as a user makes
// one, without a warning from npm, tsc or node: the package packed with npm pack,
// installed from the tarball into a project made by npm init -y (an ES module project,
// as TypeScript asks for import syntax), the declarations and route table fetched from
// the running app (GET /_engine/client.d.ts and client.js, the curl form), a program
// type-checked with the tsconfig tsc --init writes (and again with the declarations
// checked too) and run with node against the app.
func freshProject(t *testing.T, url string) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed: the fresh-project test packs and installs the client with it")
	}
	pack, project := t.TempDir(), t.TempDir()
	noWarnings := func(what, out string) {
		t.Helper()
		if strings.Contains(strings.ToLower(out), "warn") {
			t.Errorf("%s warned:\n%s", what, out)
		}
	}
	noWarnings("npm pack", runIn(t, "", nil, "npm", "pack", "--pack-destination", pack))
	tarballs, _ := filepath.Glob(filepath.Join(pack, "*.tgz"))
	if len(tarballs) != 1 {
		t.Fatalf("npm pack wrote %v, want one tarball", tarballs)
	}
	npm := func(args ...string) {
		t.Helper()
		noWarnings("npm "+strings.Join(args, " "), runIn(t, project, nil, "npm", args...))
	}
	npm("init", "-y")
	npm("pkg", "set", "type=module")
	npm("install", "--no-audit", "--no-fund", tarballs[0])
	for name, path := range map[string]string{"engine-client.d.ts": "/_engine/client.d.ts", "engine-client.js": "/_engine/client.js"} {
		res, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %v", path, res.StatusCode, err)
		}
		if err := os.WriteFile(filepath.Join(project, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	main := strings.Replace(freshMain, "URL_PLACEHOLDER", strconv.Quote(url), 1)
	if err := os.WriteFile(filepath.Join(project, "main.ts"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	tsc, err := filepath.Abs(filepath.Join("node_modules", "typescript", "bin", "tsc"))
	if err != nil {
		t.Fatal(err)
	}
	runIn(t, project, nil, "node", tsc, "--init")
	for _, extra := range [][]string{nil, {"--skipLibCheck", "false"}} {
		if out := runIn(t, project, nil, "node", append([]string{tsc, "-p", "."}, extra...)...); out != "" {
			t.Errorf("tsc %v said:\n%s", extra, out)
		}
	}
	cmd := exec.Command("node", "main.js")
	cmd.Dir = project
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.String() != "" || stdout.String() != "sum 5 dividend 1\n" {
		t.Fatalf("node main.js: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
}
