// Measures every entry minified (esbuild) and gzipped, and fails when the core client
// (createClient, the transport and the predicates) is past its budget.
import { build } from "esbuild";
import { gzipSync } from "node:zlib";

const BUDGET = 3 * 1024; // bytes, minified and gzipped
const entries = { core: "dist/index.js", auth: "dist/auth.js", agent: "dist/agent.js", react: "dist/react.js", trace: "dist/trace.js" };

let over = false;
for (const [name, file] of Object.entries(entries)) {
  const out = await build({
    entryPoints: [file], bundle: true, minify: true, format: "esm", write: false,
    external: ["react"], platform: "browser", logLevel: "silent",
  });
  const code = out.outputFiles[0].contents;
  const gz = gzipSync(code, { level: 9 }).length;
  const note = name == "core" ? ` (budget ${BUDGET} B)` : "";
  console.log(`${name.padEnd(6)} ${String(code.length).padStart(6)} B minified, ${String(gz).padStart(5)} B gzipped${note}`);
  if (name == "core" && gz > BUDGET) over = true;
}
if (over) {
  console.error(`the core client is past its size budget of ${BUDGET} bytes gzipped`);
  process.exit(1);
}
