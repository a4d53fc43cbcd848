package doccheck

import (
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// documents lists the Markdown documents whose links are checked: the top-level ones,
// every guide under docs/, and the benchmarks' pages.
func documents(t *testing.T, root string) []string {
	t.Helper()
	var docs []string
	for _, pattern := range []string{"*.md", "docs/*.md", "docs/*/*.md", "bench/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, m...)
	}
	if len(docs) < 5 {
		t.Fatalf("found only %d documents under %s", len(docs), root)
	}
	return docs
}

func TestRelativeLinksResolve(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	anchors := map[string]map[string]bool{} // by absolute path
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchors[path] = Anchors(string(b))
		return anchors[path], nil
	}
	checked := 0
	for _, doc := range documents(t, root) {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, doc)
		for _, l := range Links(string(b)) {
			u, err := url.Parse(l.Target)
			if err != nil {
				t.Errorf("%s:%d: link %q does not parse: %v", rel, l.Line, l.Target, err)
				continue
			}
			if u.Scheme != "" || u.Host != "" || l.Target == "" {
				continue // http(s), mailto: not this test's business
			}
			target := doc
			if u.Path != "" {
				if strings.HasPrefix(u.Path, "/") {
					t.Errorf("%s:%d: link %q is absolute; write it relative to the document", rel, l.Line, l.Target)
					continue
				}
				target = filepath.Join(filepath.Dir(doc), filepath.FromSlash(u.Path))
				if !strings.HasPrefix(target, root+string(filepath.Separator)) && target != root {
					t.Errorf("%s:%d: link %q leaves the repository", rel, l.Line, l.Target)
					continue
				}
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s:%d: link %q names nothing: %v", rel, l.Line, l.Target, err)
					continue
				}
			}
			checked++
			if u.Fragment == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			a, err := anchorsOf(target)
			if err != nil {
				t.Errorf("%s:%d: %v", rel, l.Line, err)
				continue
			}
			if !a[u.Fragment] {
				t.Errorf("%s:%d: link %q: no heading with the id %q in %s", rel, l.Line, l.Target, u.Fragment, filepath.Base(target))
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d relative links: is the link pattern still finding them?", checked)
	}
}

func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > MaxReadmeLines {
		t.Errorf("README.md has %d lines, over %d: move the detail into a guide under docs/ and link it from the README's map", n, MaxReadmeLines)
	}
}

func TestLinks(t *testing.T) {
	t.Parallel()
	doc := strings.Join([]string{
		"See [the guide](docs/a.md#one) and ![a plot](fig.png \"title\").",
		"`[not a link](x.md)` and <https://example.com>",
		"```go",
		"[inside a fence](y.md)",
		"```",
		"[abs](https://example.com/x) [here](#local)",
		"[ref]: ../LICENSE \"the licence\"",
	}, "\n")
	got := Links(doc)
	want := []Link{{1, "docs/a.md#one"}, {1, "fig.png"}, {6, "https://example.com/x"}, {6, "#local"}, {7, "../LICENSE"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Links:\n got %v\nwant %v", got, want)
	}
}

func TestAnchors(t *testing.T) {
	t.Parallel()
	doc := strings.Join([]string{
		"# Durability, approvals and following",
		"## Durability under faults (`bench/chaos`)",
		"## Examples",
		"```sh",
		"# not a heading",
		"```",
		"### Examples",
		"## The [wire](protocol.md) protocol",
		"## 1. The app's types",
	}, "\n")
	want := map[string]bool{
		"durability-approvals-and-following": true,
		"durability-under-faults-benchchaos": true,
		"examples":                           true,
		"examples-1":                         true,
		"the-wire-protocol":                  true,
		"1-the-apps-types":                   true,
	}
	if got := Anchors(doc); !reflect.DeepEqual(got, want) {
		t.Errorf("Anchors:\n got %v\nwant %v", got, want)
	}
}

// TestEveryGuideInTheReadmeMap checks that each guide under docs/ is linked from the
// README, whose map is how a reader finds them.
func TestEveryGuideInTheReadmeMap(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, l := range Links(string(b)) {
		if u, err := url.Parse(l.Target); err == nil && u.Scheme == "" {
			linked[filepath.Clean(filepath.FromSlash(u.Path))] = true
		}
	}
	guides, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(guides) == 0 {
		t.Fatal("no guides under docs/")
	}
	for _, g := range guides {
		rel, _ := filepath.Rel(root, g)
		if !linked[rel] {
			t.Errorf("%s is not linked from README.md: add it to the documentation map", filepath.ToSlash(rel))
		}
	}
}
