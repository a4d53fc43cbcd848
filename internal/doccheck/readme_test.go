package doccheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeExampleCompiles builds the README's Go code in a module of its own that
// requires this repository, as a reader's module would: a block that is a whole file
// ("package contract") becomes a package of that name, and every other block the body of
// a function of package main, which sees those packages, engine, clientx, ctx, log and
// fmt. It needs the go command and the module cache the repository's own build filled;
// it fetches nothing.
func TestReadmeExampleCompiles(t *testing.T) {
	t.Parallel()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: no go command on PATH to build the README's example (%v)", err)
	}
	root := repoRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := GoBlocks(string(readme))
	if len(blocks) < 3 {
		t.Fatalf("README.md has %d Go blocks; the server and client example should have at least 3", len(blocks))
	}
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var pkgImports, funcs strings.Builder
	for i, b := range blocks {
		if name, ok := strings.CutPrefix(b, "package "); ok {
			name = strings.TrimSpace(strings.SplitN(name, "\n", 2)[0])
			write(name+"/"+name+".go", b)
			fmt.Fprintf(&pkgImports, "\t%q\n", "example.com/readme/"+name)
			continue
		}
		fmt.Fprintf(&funcs, "\n// block%d is the README's Go block %d.\nfunc block%d(ctx context.Context) {\n\t_ = ctx\n%s}\n", i+1, i+1, i+1, b)
	}
	write("go.mod", "module example.com/readme\n\ngo 1.26.0\n\nrequire github.com/bbc28f59/engine v0.0.0\n\nreplace github.com/bbc28f59/engine => "+root+"\n")
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write("go.sum", string(sum))
	write("main.go", "package main\n\nimport (\n\t\"context\"\n\t\"fmt\"\n\t\"log\"\n\n"+pkgImports.String()+
		"\t\"github.com/bbc28f59/engine\"\n\t\"github.com/bbc28f59/engine/clientx\"\n)\n\n"+
		"var (\n\t_ = fmt.Sprint\n\t_ = log.Print\n\t_ = engine.NewUnit\n\t_ = clientx.New\n)\n\nfunc main() {}\n"+funcs.String())

	cmd := exec.Command(goCmd, "vet", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOSUMDB=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		main, _ := os.ReadFile(filepath.Join(dir, "main.go"))
		t.Fatalf("the README's Go example does not build: %v\n%s\nmain.go as assembled:\n%s", err, out, main)
	}
}
