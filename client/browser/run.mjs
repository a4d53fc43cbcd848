// The browser test: bundles page.tsx (the client and its React bindings) with esbuild, serves
// it from one origin with the reference app (a local proxy: the page at /, everything else
// passed through to ENGINE_URL with the Host kept, so the app's cross-origin protection sees a
// same-origin request), then drives the page in headless Chromium (puppeteer-core pointed at
// CHROME_PATH): sign in as alice, call flows, a streamed assistant reply, the transfer
// interrupt, its approval and the finished run. Every check waits for a DOM condition with a
// bounded timeout. The last screen is saved to artifacts/browser.png (browser-failure.png on
// a failure), for a person to look at; nothing is asserted on pixels.
import { build } from "esbuild";
import http from "node:http";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import assert from "node:assert/strict";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const target = new URL(process.env.ENGINE_URL || "");
const chrome = process.env.CHROME_PATH;
if (!process.env.ENGINE_URL || !chrome) throw new Error("ENGINE_URL and CHROME_PATH must be set: run this through go test ./client");
const artifacts = path.resolve(process.env.ARTIFACTS_DIR || path.join(here, "..", "artifacts"));
const WAIT = 30_000; // the bound of every DOM wait, ms
await mkdir(artifacts, { recursive: true });
for (const f of ["browser.png", "browser-interrupt.png", "browser-failure.png"]) await rm(path.join(artifacts, f), { force: true });

const bundle = await build({
  entryPoints: [path.join(here, "page.tsx")],
  bundle: true, format: "esm", platform: "browser", target: "es2022", write: false,
  jsx: "automatic", sourcemap: "inline", logLevel: "silent",
  define: { "process.env.NODE_ENV": '"development"' }, // React's checks, StrictMode's double effects
});
const js = bundle.outputFiles[0].contents;
const html = `<!doctype html><meta charset="utf-8"><title>engine client</title><link rel="icon" href="data:,">
<style>body{font:14px system-ui;margin:2em;max-width:50em}code{background:#eee}section{border-top:1px solid #ccc}</style>
<div id="root"></div><script type="module" src="/__page.js"></script>`;

const server = http.createServer((req, res) => {
  if (req.method == "GET" && (req.url == "/" || req.url == "/__page.js")) {
    const page = req.url == "/";
    res.writeHead(200, { "Content-Type": page ? "text/html; charset=utf-8" : "text/javascript", "Cache-Control": "no-store" });
    return res.end(page ? html : js);
  }
  const up = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers },
    (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    },
  );
  up.on("error", (e) => (res.headersSent ? res.destroy(e) : (res.writeHead(502), res.end(String(e)))));
  req.pipe(up);
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await puppeteer.launch({
  executablePath: chrome,
  headless: true,
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const page = await browser.newPage();
await page.setViewport({ width: 1000, height: 900 });
const problems = [];
page.on("pageerror", (e) => problems.push("page error: " + e.message));
page.on("console", (m) => m.type() == "error" && problems.push("console error: " + m.text()));
page.on("response", (r) => r.status() >= 400 && problems.push(`HTTP ${r.status()}: ${r.request().method()} ${r.url()}`));
page.on("requestfailed", (r) => {
  // The page ends its thread follow itself once the run it watches has finished.
  if (r.failure()?.errorText == "net::ERR_ABORTED" && new URL(r.url()).pathname.startsWith("/agent/threads/")) return;
  problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
});

const text = (sel) => page.$eval(sel, (e) => e.textContent);
const attr = (sel, name) => page.$eval(sel, (e, n) => e.getAttribute(n), name);
async function waitFor(what, fn, ...args) {
  try {
    await page.waitForFunction(fn, { timeout: WAIT, polling: "mutation" }, ...args);
  } catch (e) {
    const state = await page.evaluate(() => document.getElementById("root")?.innerText);
    throw new Error(`waiting for ${what}: ${e.message}\npage now:\n${state}\n${problems.join("\n")}`);
  }
}
const status = (sel, want) =>
  waitFor(`${sel} data-status=${want}`, (s, w) => {
    const el = document.querySelector(s);
    if (el?.getAttribute("data-status") == "error") return true; // fail at once below, with the error shown
    return el?.getAttribute("data-status") == w;
  }, sel, want).then(async () => {
    const got = await attr(sel, "data-status");
    if (got != want) throw new Error(`${sel}: ${got}, want ${want}: ${await text("#run-error").catch(() => "")}`);
  });

let failed = false;
try {
  await page.goto(origin + "/", { waitUntil: "load" });

  // useSession: signed out with no token; signing in stores the tokens and auth.me names alice.
  await status("#session", "signed-out");
  await page.click("#sign-in");
  await status("#session", "signed-in");
  assert.equal(await text("#me-email"), "alice@example.com");
  assert.match(await text("#session"), /signed-in as alice@example\.com \(tenant t1\)/);

  // Flows: RPC and REST through the typed client.
  await page.click("#call-flows");
  await waitFor("the flow results", () => document.getElementById("square").textContent != "");
  assert.equal(await text("#sum"), "5");
  assert.equal(await text("#square"), "144");

  // useAgentRun, a streamed reply: every value #text takes is recorded, so the test sees the
  // text so far grow word by word, not only its end.
  await page.evaluate(() => {
    window.__seen = [];
    new MutationObserver(() => window.__seen.push(document.getElementById("text").textContent)).observe(
      document.getElementById("text"), { childList: true, characterData: true, subtree: true });
  });
  await page.type("#message", "slow, please");
  await page.click("#send");
  await status("#run-status", "finished");
  const full = "one two three four five six seven eight nine ten";
  assert.equal(await text("#text"), full);
  const seen = await page.evaluate(() => window.__seen);
  const partial = seen.filter((s) => s && s != full);
  assert.ok(partial.length > 0, "no partial text was rendered: " + JSON.stringify(seen));
  for (const s of partial) assert.ok(full.startsWith(s), `rendered ${JSON.stringify(s)}, not a prefix of the reply`);
  assert.equal(await page.$$eval("#tool-calls li", (l) => l.length), 0);

  // The transfer: the run stops at the approval interrupt, with the tool call shown.
  await page.click("#message", { clickCount: 3 });
  await page.keyboard.press("Backspace");
  await page.type("#message", "transfer 500 to bob");
  await page.click("#send");
  await status("#run-status", "interrupted");
  assert.equal(await text("#text"), "", "the text of the last run is cleared by send");
  const intr = await page.$$eval("#interrupts li", (l) =>
    l.map((e) => ({ reason: e.dataset.reason, tool: e.dataset.tool, args: JSON.parse(e.querySelector(".args").textContent) })));
  assert.deepEqual(intr, [{ reason: "approval", tool: "tools.transfer", args: { to: "bob", amount: 500 } }]);
  const calls = await page.$$eval("#tool-calls li", (l) => l.map((e) => ({ id: e.dataset.id, done: e.dataset.done, args: e.querySelector(".args").textContent })));
  assert.equal(calls.length, 1, JSON.stringify(calls));
  assert.deepEqual(JSON.parse(calls[0].args), { to: "bob", amount: 500 });
  assert.equal(calls[0].done, "no");
  await page.screenshot({ path: path.join(artifacts, "browser-interrupt.png"), fullPage: true });

  // Approve: the hook follows the run once to its end; the text after the interrupt is
  // shown once (the log before it is not applied twice) and the tool call has its result.
  await page.click("#interrupts li .approve");
  await status("#run-status", "finished");
  await waitFor("the interrupt list to empty", () => document.querySelectorAll("#interrupts li").length == 0);
  assert.equal(await text("#text"), "Transferred 500 to bob.");
  const after = await page.$$eval("#tool-calls li", (l) => l.map((e) => ({ id: e.dataset.id, done: e.dataset.done, result: e.querySelector(".result").textContent })));
  assert.equal(after.length, 1, JSON.stringify(after));
  assert.equal(after[0].id, calls[0].id);
  assert.equal(after[0].done, "yes");
  assert.deepEqual(JSON.parse(after[0].result), { ok: true, to: "bob", amount: 500 });
  assert.equal(await page.$("#run-error"), null);

  // Stop: a long reply stopped mid-stream from the page ends cancelled with the text so far.
  await page.click("#message", { clickCount: 3 });
  await page.keyboard.press("Backspace");
  await page.type("#message", "a long answer, please");
  await page.click("#send");
  // Polled: React changes the text node's data, which the mutation polling of waitFor misses.
  await page.waitForFunction(() => /^word word word/.test(document.getElementById("text").textContent), { timeout: WAIT, polling: 20 });
  await page.click("#stop");
  await status("#run-status", "cancelled");
  const cut = await text("#text");
  assert.ok(cut.length > 0 && cut.length < "word ".repeat(200).length && "word ".repeat(200).startsWith(cut), `stopped text ${JSON.stringify(cut)}`);
  assert.equal(await page.$("#stop"), null);

  // The stopped run's thread, followed: one run, from RUN_STARTED to its cancelled end.
  await page.click("#follow-thread");
  await waitFor("the thread's events", () => document.querySelectorAll("#thread-events li").length > 0);
  const threadEvents = await page.$$eval("#thread-events li", (l) => l.map((e) => e.textContent));
  assert.equal(threadEvents[0], "RUN_STARTED");
  assert.equal(threadEvents.at(-1), "RUN_FINISHED:cancelled");

  // Signing out drops the tokens: useSession follows the session.
  await page.screenshot({ path: path.join(artifacts, "browser.png"), fullPage: true });
  await page.click("#sign-out");
  await status("#session", "signed-out");
  assert.equal(await page.$("#me-email"), null);

  assert.deepEqual(problems, []);
  console.log("browser test passed; screenshots in " + artifacts);
} catch (e) {
  failed = true;
  await page.screenshot({ path: path.join(artifacts, "browser-failure.png"), fullPage: true }).catch(() => {});
  console.error(e);
  if (problems.length) console.error(problems.join("\n"));
} finally {
  await browser.close();
  server.closeAllConnections();
  server.close();
}
process.exit(failed ? 1 : 0);
