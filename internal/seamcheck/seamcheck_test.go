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
