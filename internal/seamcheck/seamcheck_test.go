package seamcheck

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const root = "github.com/bbc28f59/engine"

type pkg struct {
	ImportPath string
	Imports    []string
}

// list runs go list over the module and decodes its packages.
func list(t *testing.T) []pkg {
	t.Helper()
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: no go command on PATH to list the module's packages (%v)", err)
	}
	cmd := exec.Command(goCmd, "list", "-json=ImportPath,Imports", root+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestExtensionsUseOnlyThePublicSeam(t *testing.T) {
	t.Parallel()
	pkgs := list(t)
	var rootInternal []string
	for _, p := range pkgs {
		if p.ImportPath == root {
			for _, imp := range p.Imports {
				if strings.HasPrefix(imp, root+"/internal/") {
					rootInternal = append(rootInternal, imp)
				}
			}
		}
		if p.ImportPath == root+"/internal/hook" || p.ImportPath == root+"/internal/ext" {
			t.Errorf("%s exists: the private door into the root is back", p.ImportPath)
		}
	}
	checked := 0
	for _, p := range pkgs {
		if p.ImportPath == root || strings.HasPrefix(p.ImportPath, root+"/internal/") || !slices.Contains(p.Imports, root) {
			continue
		}
		checked++
		for _, imp := range p.Imports {
			if slices.Contains(rootInternal, imp) {
				t.Errorf("%s imports %s, an internal package of the root's: use engine's public API instead", p.ImportPath, imp)
			}
		}
	}
	if checked < 10 {
		t.Fatalf("checked %d packages that import engine; the module has more: the listing is wrong", checked)
	}
	t.Logf("%d packages that import engine checked against the root's internal packages %v", checked, rootInternal)
}

// TestRootTestsLinkNoDatabase keeps the root package's tests off the SQL drivers: `go mod
// tidy` in a module that imports only the root records the modules its tests need, so a
// database driver there would be downloaded by every such module (CONTRIBUTING.md,
// "Module layout").
func TestRootTestsLinkNoDatabase(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: no go command on PATH to list the root's test dependencies (%v)", err)
	}
	out, err := exec.Command(goCmd, "list", "-deps", "-test", root).Output()
	if err != nil {
		t.Fatalf("go list -deps -test %s: %v", root, err)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		for _, banned := range []string{"github.com/uptrace/bun", "github.com/jackc/pgx", "modernc.org/sqlite", root + "/journal"} {
			if dep == banned || strings.HasPrefix(dep, banned+"/") {
				t.Errorf("the root package's tests link %s; keep database set-up out of them (use internal/testauth for auth fakes)", dep)
			}
		}
	}
}
