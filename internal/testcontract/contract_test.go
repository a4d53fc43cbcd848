package testcontract_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/bbc28f59/engine/internal/testcontract"
)

// TestDeclarationsOnly pins what makes this a contract package: it imports engine and
// the standard library (plus the schema package for input refinements) and never binds
// a handler or builds an app, so a client importing it links no handler code.
func TestDeclarationsOnly(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{
		"github.com/bbc28f59/engine":                 true,
		"github.com/google/jsonschema-go/jsonschema": true,
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, ".") && !allowed[path] {
				t.Errorf("%s imports %s; a contract imports only engine and the standard library", name, path)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "engine" {
				switch sel.Sel.Name {
				case "Bind", "New", "Mount", "OnStart", "WithAuthenticator":
					t.Errorf("%s: engine.%s at %s; a contract declares flows and binds nothing", name, sel.Sel.Name, fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no source files checked")
	}
}

// TestRoutesCoverTriggeredFlows checks the contract's route map lists exactly the flows
// with an HTTP trigger, so the contract-form client uses REST where the server does.
func TestRoutesCoverTriggeredFlows(t *testing.T) {
	t.Parallel()
	routes := testcontract.Routes()
	want := 0
	for _, fl := range append(append(testcontract.Math.Flows(), testcontract.Items.Flows()...), testcontract.Faults.Flows()...) {
		rt, triggered := fl.Trigger()
		got, listed := routes[fl.Unit()][fl.Name()]
		if triggered != listed {
			t.Errorf("%s: triggered=%v but listed in routes=%v", fl.ID(), triggered, listed)
			continue
		}
		if triggered {
			want++
			if got != rt {
				t.Errorf("%s: route %+v, want %+v", fl.ID(), got, rt)
			}
		}
	}
	n := 0
	for _, flows := range routes {
		n += len(flows)
	}
	if n != want || want == 0 {
		t.Errorf("routes list %d flows, want %d (non-zero)", n, want)
	}
}
