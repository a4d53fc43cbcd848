package tsgen

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden pins the declarations and the route module generated from the reference
// app's descriptor (examples/conformance; the client's integration test checks that the
// descriptor here is still the one the app serves).
func TestGolden(t *testing.T) {
	body, err := os.ReadFile(filepath.Join("testdata", "conformance.json"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	out := Generate(d, "http://127.0.0.1:8787/_engine/client.json")
	if len(out.Problems) > 0 {
		t.Fatalf("the reference app's descriptor has untranslatable schemas: %v", out.Problems)
	}
	for name, got := range map[string][]byte{"conformance.d.ts.golden": out.DTS, "conformance.js.golden": out.JS} {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/tsgen -update)", err)
		}
		if string(want) != string(got) {
			t.Errorf("%s differs from the generated output (run go test ./internal/tsgen -update and review the diff):\n%s", name, got)
		}
	}
}

// gen1 translates one input schema and returns the declarations and the problems.
func gen1(t *testing.T, schema string) (string, []Problem) {
	t.Helper()
	d, err := Parse([]byte(`{"version":1,"rpc":"/_engine/{unit}/{flow}","units":[{"name":"shop","flows":[` +
		`{"name":"buy","id":"shop.buy","rpc":"/_engine/shop/buy","trigger":null,"public":true,"gated":false,"durable":false,` +
		`"input":` + schema + `,"output":true,"errors":{}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	out := Generate(d, "test")
	return string(out.DTS), out.Problems
}

func TestSchemaShapes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, schema string
		want         []string // each must appear in the declarations
	}{
		{"object with required and optional fields",
			`{"type":"object","properties":{"sku":{"type":"string"},"qty":{"type":"integer","minimum":1},"gift":{"type":"boolean"}},"required":["sku","qty"],"additionalProperties":false}`,
			[]string{"export type ShopBuyInput = {\n  sku: string;\n  qty: number;\n  gift?: boolean;\n};"}},
		{"array of objects",
			`{"type":"object","properties":{"lines":{"type":"array","items":{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}}},"required":["lines"]}`,
			[]string{"lines: {\n    n: number;\n  }[];"}},
		{"enum", `{"type":"object","properties":{"size":{"enum":["s","m","l",3,null]}},"required":["size"]}`,
			[]string{`size: "s" | "m" | "l" | 3 | null;`}},
		{"const", `{"const":"fixed"}`, []string{`export type ShopBuyInput = "fixed";`}},
		{"union with anyOf", `{"anyOf":[{"type":"string"},{"type":"array","items":{"type":"number"}}]}`,
			[]string{`export type ShopBuyInput = (string | number[]);`}},
		{"union with oneOf and a type list", `{"type":["string","number"]}`, []string{`export type ShopBuyInput = string | number;`}},
		{"nullable by type list", `{"type":"object","properties":{"tags":{"type":["null","array"],"items":{"type":"string"}}},"required":["tags"]}`,
			[]string{"tags: string[] | null;"}},
		{"nullable keyword", `{"type":"string","nullable":true}`, []string{`export type ShopBuyInput = string | null;`}},
		{"nullable items", `{"type":"array","items":{"type":["string","null"]}}`, []string{`export type ShopBuyInput = (string | null)[];`}},
		{"defs and refs", `{"$defs":{"Money":{"type":"object","properties":{"cents":{"type":"integer"}},"required":["cents"]}},"type":"object","properties":{"price":{"$ref":"#/$defs/Money"}},"required":["price"]}`,
			[]string{"export type ShopBuyInputMoney = {\n  cents: number;\n};", "price: ShopBuyInputMoney;"}},
		{"recursive definition", `{"$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"$ref":"#/$defs/node"}`,
			[]string{"export type ShopBuyInputNode = {\n  name: string;\n  children?: ShopBuyInputNode[];\n};", "export type ShopBuyInput = ShopBuyInputNode;"}},
		{"recursive root", `{"type":"object","properties":{"next":{"$ref":"#"}}}`, []string{"next?: ShopBuyInput;"}},
		{"map", `{"type":"object","additionalProperties":{"type":"integer"}}`, []string{"[key: string]: number;"}},
		{"open object", `{"type":"object"}`, []string{`export type ShopBuyInput = { [key: string]: unknown };`}},
		{"closed empty object", `{"type":"object","additionalProperties":false}`, []string{`export type ShopBuyInput = Record<string, never>;`}},
		{"allOf", `{"allOf":[{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]},{"type":"object","properties":{"b":{"type":"string"}},"required":["b"]}]}`,
			[]string{"{\n  a: string;\n} & {\n  b: string;\n}"}},
		{"tuple", `{"type":"array","prefixItems":[{"type":"string"},{"type":"number"}],"items":false}`, []string{`export type ShopBuyInput = [string, number];`}},
		{"quoted keys and descriptions", `{"type":"object","properties":{"x-y":{"type":"string","description":"a */ dash"}},"required":["x-y"]}`,
			[]string{"/** a *\\/ dash */\n  \"x-y\": string;"}},
		{"true schema", `true`, []string{`export type ShopBuyInput = unknown;`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dts, problems := gen1(t, c.schema)
			if len(problems) > 0 {
				t.Fatalf("problems: %v", problems)
			}
			for _, w := range c.want {
				if !strings.Contains(dts, w) {
					t.Errorf("want %q in:\n%s", w, dts)
				}
			}
		})
	}
}

// TestUntranslatable: a schema with no TypeScript translation becomes unknown with a
// comment, and the problem names the flow and the field.
func TestUntranslatable(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, schema, where, comment string }{
		{"not", `{"type":"object","properties":{"code":{"not":{"type":"string"}}},"required":["code"]}`, "input code", "code: unknown /* untranslatable: keyword not has no TypeScript translation */;"},
		{"foreign ref", `{"type":"object","properties":{"m":{"$ref":"https://example.com/money.json"}}}`, "input m", "m?: unknown /* untranslatable: $ref https://example.com/money.json does not name a definition of this schema */;"},
		{"bad type", `{"type":"object","properties":{"n":{"type":"decimal"}}}`, "input n", "n?: unknown /* untranslatable: type decimal is not a JSON Schema type */;"},
		{"if/then", `{"if":{"type":"string"},"then":{"minLength":2}}`, "input", "export type ShopBuyInput = unknown /* untranslatable: keyword if has no TypeScript translation */;"},
		{"not a schema", `[1,2]`, "input", "export type ShopBuyInput = unknown /* untranslatable: a schema must be an object or a boolean */;"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dts, problems := gen1(t, c.schema)
			if len(problems) != 1 || problems[0].Flow != "shop.buy" || problems[0].Where != c.where {
				t.Fatalf("want one problem on shop.buy %s, got %v", c.where, problems)
			}
			if !strings.Contains(dts, c.comment) {
				t.Errorf("want %q in:\n%s", c.comment, dts)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	serve := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != DescriptorPath {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	cases := []struct{ name, url, want string }{
		{"unreachable", closedURL, "cannot reach " + closedURL + DescriptorPath},
		{"not found", serve(404, "nope"), "answered HTTP 404, not a descriptor"},
		{"html", serve(200, "<html></html>"), "not a descriptor: the reply is not a JSON object"},
		{"json without units", serve(200, `{"hello":"world"}`), "not a descriptor: the reply has no units member"},
		{"future version", serve(200, `{"version":9,"units":[]}`), "descriptor version 9 is not supported"},
		{"bad flow name", serve(200, `{"version":1,"units":[{"name":"u","flows":[{"name":"a-b"}]}]}`), `flow name "a-b" in unit u is not an identifier`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			err := Add(context.Background(), http.DefaultClient, c.url, dir, new(strings.Builder))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want an error containing %q, got %v", c.want, err)
			}
			if _, err := os.Stat(filepath.Join(dir, DTSFile)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a failed add wrote %s", DTSFile)
			}
		})
	}
}

// TestAddUntranslatable: the files are written, the problems reported, and the error
// says so, so the command exits non-zero.
func TestAddUntranslatable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"version":1,"units":[{"name":"shop","flows":[{"name":"buy","input":{"type":"object","properties":{"when":{"if":{}}}},"output":true,"errors":{}}]}]}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	var warn strings.Builder
	err := Add(context.Background(), http.DefaultClient, srv.URL, dir, &warn)
	if !errors.Is(err, ErrUntranslatable) {
		t.Fatalf("want ErrUntranslatable, got %v", err)
	}
	if !strings.Contains(warn.String(), "shop.buy: input when: keyword if has no TypeScript translation") {
		t.Errorf("warning: %q", warn.String())
	}
	dts, err := os.ReadFile(filepath.Join(dir, DTSFile))
	if err != nil || !strings.Contains(string(dts), "when?: unknown /* untranslatable") {
		t.Errorf("declarations: %v\n%s", err, dts)
	}
}

// TestParenSkipsStringsAndComments: brackets and bars inside string literals and
// comments are not syntax, so an array of a union is still parenthesised (and one of a
// single literal holding a bar is not).
func TestParenSkipsStringsAndComments(t *testing.T) {
	t.Parallel()
	dts, problems := gen1(t, `{"type":"object","properties":{`+
		`"tags":{"type":"array","items":{"enum":["(","x"]}},`+
		`"rows":{"type":"array","items":{"type":["object","null"],"properties":{"a":{"type":"string","description":"step 1) do it"}}}},`+
		`"bars":{"type":"array","items":{"const":"a|b"}},`+
		`"open":{"type":"array","items":{"anyOf":[{"const":"x"},{"type":"object","properties":{"q":{"type":"string","description":"see { here | ("}}}]}}},`+
		`"required":["tags","rows","bars","open"]}`)
	if len(problems) > 0 {
		t.Fatalf("problems: %v", problems)
	}
	want := "export type ShopBuyInput = {\n" +
		"  tags: (\"(\" | \"x\")[];\n" +
		"  rows: ({\n    /** step 1) do it */\n    a?: string;\n  } | null)[];\n" +
		"  bars: \"a|b\"[];\n" +
		"  open: (\"x\" | {\n    /** see { here | ( */\n    q?: string;\n  })[];\n" +
		"};\n"
	if !strings.Contains(dts, want) {
		t.Fatalf("want\n%s\nin:\n%s", want, dts)
	}
	tscCheck(t, []byte(dts), `import type { ShopBuyInput } from "./engine-client.js";
const ok: ShopBuyInput = { tags: ["(", "x"], rows: [{ a: "s" }, null], bars: ["a|b"], open: ["x", { q: "" }] };
// @ts-expect-error: a tag is one of the enum's values
const badTag: ShopBuyInput = { tags: ["y"], rows: [], bars: [], open: [] };
// @ts-expect-error: rows is an array, not a row or null
const badRows: ShopBuyInput = { tags: [], rows: null, bars: [], open: [] };
export { ok, badTag, badRows };
`)
}

// TestQuoteAsJSON: property keys and route strings are quoted by JSON's rules, which
// JavaScript reads as the same string; Go's \a or \U000e0001 escapes it reads otherwise.
func TestQuoteAsJSON(t *testing.T) {
	t.Parallel()
	out := genDesc(t, `{"version":1,"units":[{"name":"u","flows":[{"name":"f","trigger":{"method":"GET","path":"/a\u0007b/\udb40\udc01/<&>"},`+
		`"input":{"type":"object","properties":{"a\u0007b":{"type":"string"},"t\udb40\udc01":{"type":"number"},"q\"\\<":{"type":"boolean"}},"required":["a\u0007b"]},"output":true}]}]}`)
	if len(out.Problems) > 0 {
		t.Fatalf("problems: %v", out.Problems)
	}
	dts := string(out.DTS)
	want := "export type UFInput = {\n  \"a\\u0007b\": string;\n  \"t\U000e0001\"?: number;\n  \"q\\\"\\\\<\"?: boolean;\n};\n"
	if !strings.Contains(dts, want) {
		t.Errorf("want\n%s\nin:\n%s", want, dts)
	}
	route := "f: { method: \"GET\", path: \"/a\\u0007b/\U000e0001/<&>\" }"
	if !strings.Contains(dts, route) || !strings.Contains(string(out.JS), route) {
		t.Errorf("want %q in both files:\n%s\n%s", route, dts, out.JS)
	}
	if got := nodeEval(t, out.JS, `import { $routes } from "./engine-client.js";
console.log($routes.u.f.path === "/a\u0007b/\u{e0001}/<&>");`); got != "true" {
		t.Errorf("node reads another path: %s", got)
	}
	tscCheck(t, out.DTS, `import type { UFInput } from "./engine-client.js";
const ok: UFInput = { "a\u0007b": "s", "t\u{e0001}": 1, "q\"\\<": true };
export { ok };
`)
}

// TestProtoRoutes: a unit or flow named __proto__ is an own property of $routes, not its
// prototype.
func TestProtoRoutes(t *testing.T) {
	t.Parallel()
	out := genDesc(t, `{"version":1,"units":[{"name":"__proto__","flows":[`+
		`{"name":"get","trigger":{"method":"GET","path":"/x"},"input":{"type":"object"},"output":{"type":"string"}},`+
		`{"name":"__proto__","trigger":{"method":"POST","path":"/y"},"input":{"type":"object"},"output":{"type":"string"}}]}]}`)
	want := "export const $routes = {\n  [\"__proto__\"]: {\n" +
		"    [\"__proto__\"]: { method: \"POST\", path: \"/y\" },\n" +
		"    get: { method: \"GET\", path: \"/x\" }\n  }\n};\n"
	if !strings.Contains(string(out.JS), want) {
		t.Errorf("want\n%s\nin:\n%s", want, out.JS)
	}
	got := nodeEval(t, out.JS, `import { $routes } from "./engine-client.js";
const u = Object.getOwnPropertyDescriptor($routes, "__proto__")?.value;
console.log(JSON.stringify([Object.keys($routes), Object.getPrototypeOf($routes) === Object.prototype,
  u && Object.keys(u), u && Object.getPrototypeOf(u) === Object.prototype, u && u.get.path]));`)
	if w := `[["__proto__"],true,["__proto__","get"],true,"/x"]`; got != w {
		t.Errorf("node: got %s, want %s", got, w)
	}
	tscCheck(t, out.DTS, `import { $routes } from "./engine-client.js";
const p: "/x" = $routes["__proto__"].get.path;
const m: "POST" = $routes["__proto__"]["__proto__"].method;
export { p, m };
`)
}

// TestTypeNames: type names are identifiers whatever the unit, flow, error code or
// definition is called, and names that meet get a numbered suffix in the descriptor's
// order.
func TestTypeNames(t *testing.T) {
	t.Parallel()
	out := genDesc(t, `{"version":1,"units":[`+
		`{"name":"a_b","flows":[{"name":"c","input":{"type":"string"},"output":{"type":"string"}}]},`+
		`{"name":"a","flows":[{"name":"b_c","input":{"type":"number"},"output":{"type":"number"}}]},`+
		`{"name":"_1","flows":[{"name":"x","input":{"$defs":{"a<b>=c;{d}":{"type":"boolean"},"":{"type":"null"}},"$ref":"#/$defs/a<b>=c;{d}"},"output":true}]},`+
		`{"name":"u","flows":[{"name":"f","input":true,"output":true,"errors":{`+
		`"Bad:Input":{"status":400,"data":{"type":"string"}},"not_found":{"status":404,"data":{"const":1}},"NotFound":{"status":404,"data":{"const":2}},"ü/v2":{"status":409}}}]}]}`)
	if len(out.Problems) > 0 {
		t.Fatalf("problems: %v", out.Problems)
	}
	dts := string(out.DTS)
	for _, w := range []string{
		"export type ABCInput = string;\n\nexport type ABCOutput = string;\n\n" +
			"export type ABCInput2 = number;\n\nexport type ABCOutput2 = number;\n\n" +
			"export type _1XInput2 = null;\n\nexport type _1XInputABCD = boolean;\n\nexport type _1XInput = _1XInputABCD;\n\n" +
			"export type _1XOutput = unknown;\n\n" +
			"export type UFInput = unknown;\n\nexport type UFOutput = unknown;\n\n" +
			"export type UFBadInputData = string;\n\nexport type UFNotFoundData = 2;\n\nexport type UFNotFoundData2 = 1;\n\n" +
			"export type UFV2Data = unknown;\n\n",
		"    c: { input: ABCInput; output: ABCOutput; errors: {}; gated: false };\n",
		"    b_c: { input: ABCInput2; output: ABCOutput2; errors: {}; gated: false };\n",
		`    f: { input: UFInput; output: UFOutput; errors: { "Bad:Input": UFBadInputData; NotFound: UFNotFoundData; not_found: UFNotFoundData2; "ü/v2": UFV2Data }; gated: false };` + "\n",
	} {
		if !strings.Contains(dts, w) {
			t.Errorf("want\n%s\nin:\n%s", w, dts)
		}
	}
	tscCheck(t, out.DTS, `import type { App } from "./engine-client.js";
const c: App["a_b"]["c"]["input"] = "s";
const bc: App["a"]["b_c"]["input"] = 1;
// @ts-expect-error: a.b_c takes a number, not a_b.c's string
const bad: App["a"]["b_c"]["input"] = "s";
const nf: App["u"]["f"]["errors"]["not_found"] = 1;
const NF: App["u"]["f"]["errors"]["NotFound"] = 2;
export { c, bc, bad, nf, NF };
`)
}

// TestPointerRefs: a $ref is a JSON Pointer in a URI fragment: ~1 and ~0 stand for / and
// ~ in a definition's name, and the fragment may be percent-encoded; an unescaped /
// separates names, so it does not name the definition a/b.
func TestPointerRefs(t *testing.T) {
	t.Parallel()
	dts, problems := gen1(t, `{"$defs":{"a/b":{"type":"string"},"c~d":{"type":"number"},"e f":{"type":"boolean"}},`+
		`"definitions":{"~1":{"type":"null"}},"type":"object","properties":{`+
		`"ab":{"$ref":"#/$defs/a~1b"},"cd":{"$ref":"#/$defs/c~0d"},"ef":{"$ref":"#/$defs/e%20f"},"t":{"$ref":"#/definitions/~01"},`+
		`"pct":{"$ref":"#/%24defs/a~1b"},"raw":{"$ref":"#/$defs/a/b"},"bad":{"$ref":"#/$defs/c~2d"}},"required":["ab","cd","ef","t","pct"]}`)
	want := "export type ShopBuyInputAB = string;\n\n" +
		"export type ShopBuyInputCD = number;\n\n" +
		"export type ShopBuyInputEF = boolean;\n\n" +
		"export type ShopBuyInput1 = null;\n\n" +
		"export type ShopBuyInput = {\n" +
		"  ab: ShopBuyInputAB;\n  cd: ShopBuyInputCD;\n  ef: ShopBuyInputEF;\n  t: ShopBuyInput1;\n  pct: ShopBuyInputAB;\n" +
		"  raw?: unknown /* untranslatable: $ref #/$defs/a/b does not name a definition of this schema */;\n" +
		"  bad?: unknown /* untranslatable: $ref #/$defs/c~2d does not name a definition of this schema */;\n" +
		"};\n"
	if !strings.Contains(dts, want) {
		t.Errorf("want\n%s\nin:\n%s", want, dts)
	}
	if len(problems) != 2 || problems[0].Where != "input raw" || problems[1].Where != "input bad" {
		t.Errorf("want problems at raw and bad, got %v", problems)
	}
}

// TestAddAtomic: when either file cannot be written, neither is replaced and no
// temporary file is left; when both can, only the two files are there.
func TestAddAtomic(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"version":1,"units":[{"name":"u","flows":[{"name":"f","input":{"type":"string"},"output":{"type":"string"}}]}]}`))
	}))
	defer srv.Close()
	list := func(dir string) string {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return strings.Join(names, " ")
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, DTSFile), []byte("// old d.ts\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, JSFile), 0o755); err != nil { // the JS cannot be replaced
		t.Fatal(err)
	}
	err := Add(context.Background(), http.DefaultClient, srv.URL, dir, new(strings.Builder))
	if err == nil || !strings.Contains(err.Error(), "cannot replace "+filepath.Join(dir, JSFile)+": it is a directory") {
		t.Errorf("want an error about %s, got %v", JSFile, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, DTSFile)); err != nil || string(b) != "// old d.ts\n" {
		t.Errorf("a failed add replaced %s: %v %q", DTSFile, err, b)
	}
	if got, want := list(dir), DTSFile+" "+JSFile; got != want {
		t.Errorf("files left: %s, want %s", got, want)
	}

	dir = t.TempDir()
	if err := Add(context.Background(), http.DefaultClient, srv.URL, dir, new(strings.Builder)); err != nil {
		t.Fatal(err)
	}
	if got, want := list(dir), DTSFile+" "+JSFile; got != want {
		t.Errorf("files: %s, want %s", got, want)
	}
	for _, name := range []string{DTSFile, JSFile} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode().Perm() != 0o644 || fi.Size() == 0 {
			t.Errorf("%s: %v %v", name, err, fi)
		}
	}
}
