package tsgen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// genDesc generates from a whole descriptor, failing the test on a parse error.
func genDesc(t *testing.T, desc string) Output {
	t.Helper()
	d, err := Parse([]byte(desc))
	if err != nil {
		t.Fatal(err)
	}
	return Generate(d, "test")
}

// tscCheck compiles the generated declarations, with check.ts (TypeScript that uses
// them) when it is not empty, under strict settings against the client package's
// source (not client/dist, which go test ./client rebuilds meanwhile). It skips when
// the client's node_modules are not installed (npm ci --prefix client).
func tscCheck(t *testing.T, dts []byte, check string) {
	t.Helper()
	client, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	tsc := filepath.Join(client, "node_modules", "typescript", "bin", "tsc")
	lib := filepath.Join(client, "src", "index.ts")
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the tsc check needs it")
	}
	for _, p := range []string{tsc, lib} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing: run npm ci --prefix client for the tsc check", p)
		}
	}
	libJSON, _ := json.Marshal(lib)
	dir := t.TempDir()
	files := map[string]string{
		DTSFile: string(dts),
		"tsconfig.json": `{"compilerOptions":{"strict":true,"noEmit":true,"module":"ES2022","moduleResolution":"Bundler",` +
			`"target":"ES2022","lib":["ES2022","DOM"],"types":[],"paths":{"` + PackageName + `":[` + string(libJSON) + `]}},"include":["*.ts"]}`,
	}
	if check != "" {
		files["check.ts"] = check
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("node", tsc, "-p", filepath.Join(dir, "tsconfig.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("tsc: %v\n%s\ndeclarations:\n%s", err, out, dts)
	}
}

// nodeEval runs a module script next to the generated engine-client.js and returns its
// standard output, trimmed. It skips when node is not installed.
func nodeEval(t *testing.T, js []byte, script string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, JSFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "check.mjs"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", filepath.Join(dir, "check.mjs")).CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s\nmodule:\n%s", err, out, js)
	}
	return strings.TrimSpace(string(out))
}
