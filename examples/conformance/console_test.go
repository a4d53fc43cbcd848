package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine/ai/providers/openai/openaitest"
	"github.com/bbc28f59/engine/internal/testenv"
)

// TestConsole drives the console of a real process of this app (ENGINE_CONSOLE=1) in
// headless Chromium (consoleui/console.mjs, puppeteer-core and axe-core pinned in
// consoleui/package.json): ops signs in by the controls' accessible names, calls
// math.divide through its generated form (DivideByZero), sees alice's agent run appear
// live, watches its transcript grow, approves its transfer from Approvals and sees the
// run finish; the pages are walked by keyboard; alice is refused and sees no flow name.
// axe-core finds no serious or critical violation on any page. Screenshots go to
// consoleui/artifacts (not committed).
func TestConsole(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the console test builds and starts the reference app and a browser")
	}
	chrome := consoleChromium()
	if chrome == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no Chromium found (CHROME_PATH or /usr/bin/chromium): CI must install Debian's chromium (.ci/run does)")
		}
		t.Skip("no Chromium found (CHROME_PATH or /usr/bin/chromium): the console test needs one; apt-get install chromium")
	}
	consoleModules(t)
	bin := testenv.Build(t, ".")
	model := openaitest.NewServerFunc(slowAssistant)
	defer model.Close()
	app := startInstance(t, bin, "console", []string{
		"ENGINE_CONSOLE=1",
		"ENGINE_JOURNAL=sqlite:" + filepath.Join(t.TempDir(), "app.db"),
		"ENGINE_MODEL_BASE_URL=" + model.URL(),
		"ENGINE_MODEL_API_KEY=test",
		"ENGINE_JWT_KEY=console-test-key-0123456789abcdef0123",
	})
	cmd := exec.Command("node", filepath.Join("consoleui", "console.mjs"))
	cmd.Env = append(os.Environ(), "CONSOLE_URL="+app.URL, "CHROME_PATH="+chrome,
		"ALICE_TOKEN="+signIn(t, app.URL, "alice@example.com"), "ARTIFACTS_DIR="+filepath.Join("consoleui", "artifacts"))
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("the console scenarios failed: %v", err)
	}
	t.Logf("screenshots in %s", filepath.Join("examples", "conformance", "consoleui", "artifacts"))
}

// slowAssistant streams its first reply word by word, slowly enough that a transcript
// followed live is seen growing, then asks to transfer 500 to bob (an approval); after
// the tool it says "Done: <result>".
func slowAssistant(req openaitest.Request) openaitest.Turn {
	last := req.Messages[len(req.Messages)-1]
	if last.Role == "tool" {
		return openaitest.Turn{Text: "Done: " + last.Text()}
	}
	if strings.Contains(last.Text(), "transfer 500 to bob") {
		return openaitest.Turn{Text: "I will move the money for you now, one careful step after another, as asked.",
			Delay: 120 * time.Millisecond, ToolCalls: []openaitest.ToolCall{{ID: "call_bob", Name: "tools_transfer", Arguments: `{"to":"bob","amount":500}`}}}
	}
	return openaitest.Turn{Text: "Reply to: " + last.Text()}
}

// consoleChromium finds the browser: CHROME_PATH, else Debian's chromium.
func consoleChromium() string {
	if p := os.Getenv("CHROME_PATH"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// consoleModules installs consoleui's pinned packages with npm ci when missing.
func consoleModules(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join("consoleui", "node_modules", "axe-core", "axe.min.js")); err == nil {
		if _, err := os.Stat(filepath.Join("consoleui", "node_modules", "puppeteer-core")); err == nil {
			return
		}
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("npm is not installed: CI must have it to install puppeteer-core and axe-core (consoleui/package.json)")
		}
		t.Skip("npm is not installed: the console test installs puppeteer-core and axe-core with npm ci")
	}
	cmd := exec.Command("npm", "ci", "--prefix", "consoleui", "--no-audit", "--no-fund", "--loglevel=error")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci --prefix consoleui: %v\n%s", err, out)
	}
}
