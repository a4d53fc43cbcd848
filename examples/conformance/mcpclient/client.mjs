// The official TypeScript SDK's MCP client against the reference app (APP.md, "MCP"):
// the tools and their schemas, a public call (its structured content checked by the SDK
// against the tool's output schema), a declared error as an isError result, a gated tool
// with and without a token, and the notes resources as two tenants. Run by
// examples/conformance's TestMCPWithTypeScriptClient, which sets MCP_URL, MCP_ALICE,
// MCP_CAROL and MCP_NOTE_URI. Exits non-zero with the first failure.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import assert from "node:assert/strict";

const url = new URL(process.env.MCP_URL);
const noteURI = process.env.MCP_NOTE_URI;

async function connect(token) {
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const client = new Client({ name: "conformance-ts", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers } }));
  return client;
}

const text = (res) => res.content?.[0]?.text;

const anon = await connect();
const { tools } = await anon.listTools();
assert.deepEqual(tools.map((t) => t.name),
  ["math.add", "math.divide", "math.echo", "math.search", "math.square", "notes.get", "notes.list"]);
for (const t of tools) {
  assert.ok(t.description, `${t.name} has a description`);
  assert.equal(t.inputSchema.type, "object", `${t.name} has an object inputSchema`);
}
const add = tools.find((t) => t.name === "math.add");
assert.deepEqual(add.inputSchema.properties, { a: { type: "number" }, b: { type: "number" } });
assert.deepEqual(add.outputSchema.properties, { sum: { type: "number" } });

let res = await anon.callTool({ name: "math.add", arguments: { a: 1, b: 2 } });
assert.deepEqual(res.structuredContent, { sum: 3 });
assert.equal(res.isError, undefined);

res = await anon.callTool({ name: "math.divide", arguments: { a: 1, b: 0 } });
assert.equal(res.isError, true);
assert.deepEqual(JSON.parse(text(res)), { code: "DivideByZero", data: { dividend: 1 } });
assert.equal(res.structuredContent, undefined);

res = await anon.callTool({ name: "notes.list", arguments: {} });
assert.equal(res.isError, true);
assert.equal(JSON.parse(text(res)).code, "Unauthorized");

const alice = await connect(process.env.MCP_ALICE);
res = await alice.callTool({ name: "notes.list", arguments: {} });
assert.equal(res.isError, undefined, text(res));
assert.ok(res.structuredContent.result.some((n) => `engine://notes/${n.id}` === noteURI), "alice's list has her note");

let list = await alice.listResources();
assert.ok(list.resources.some((r) => r.uri === noteURI), "alice lists her note");
const read = await alice.readResource({ uri: noteURI });
assert.equal(read.contents[0].mimeType, "application/json");
assert.equal(JSON.parse(read.contents[0].text).title, "Groceries");

const carol = await connect(process.env.MCP_CAROL);
list = await carol.listResources();
assert.ok(!list.resources.some((r) => r.uri === noteURI), "carol does not list alice's note");
await assert.rejects(carol.readResource({ uri: noteURI }), (err) => err.code === -32002, "carol reads alice's note");

for (const c of [anon, alice, carol]) await c.close();
console.log("typescript client: ok");
