// Package contractcheck checks that a contract package is declarations only, for the
// tests of every contract package in this module. It imports only the standard library,
// so a contract's test links nothing the contract does not.
package contractcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// allowed are the non-standard imports a contract may have: engine, and the schema
// package for input refinements.
var allowed = map[string]bool{
	"github.com/bbc28f59/engine":                 true,
	"github.com/google/jsonschema-go/jsonschema": true,
}

// bindsOrBuilds are the engine functions that bind a handler or build an app.
var bindsOrBuilds = map[string]bool{"Bind": true, "New": true, "Mount": true, "OnStart": true, "WithAuthenticator": true}

// DeclarationsOnly fails t unless every non-test Go file in dir imports only engine, the
// standard library and the schema package, and never binds a handler or builds an app:
// what makes a package a contract, so that a client importing it links no handler code.
func DeclarationsOnly(t testing.TB, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
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
		engineName := "engine"
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(path, ".") && !allowed[path] {
				t.Errorf("%s imports %s; a contract imports only engine and the standard library", name, path)
			}
			if path == "github.com/bbc28f59/engine" && imp.Name != nil {
				engineName = imp.Name.Name
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == engineName && bindsOrBuilds[sel.Sel.Name] {
				t.Errorf("%s: engine.%s at %s; a contract declares flows and binds nothing", name, sel.Sel.Name, fset.Position(sel.Pos()))
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatalf("no source files checked in %s", dir)
	}
}
