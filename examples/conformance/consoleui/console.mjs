// The console's browser test: drives the console of a running examples/conformance
// (CONSOLE_URL, started with ENGINE_CONSOLE=1) in headless Chromium (puppeteer-core at
// CHROME_PATH), finding every control by its accessible name: sign in as ops, call
// math.divide through its generated form and see DivideByZero, see alice's agent run
// appear live, watch its transcript grow, approve its transfer from Approvals and see the
// run finish, renew an expired token, move through the pages by keyboard only, then sign in as alice and be
// refused with no flow name on the page. axe-core checks every page (no serious or
// critical violation). Screenshots of each page go to artifacts/ (ARTIFACTS_DIR), for a
// person to look at; nothing is asserted on pixels.
import { mkdir, readFile, rm } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";
import puppeteer from "puppeteer-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const base = process.env.CONSOLE_URL;
const chrome = process.env.CHROME_PATH;
const aliceToken = process.env.ALICE_TOKEN;
const password = process.env.DEMO_PASSWORD || "correct horse battery staple";
if (!base || !chrome || !aliceToken) throw new Error("CONSOLE_URL, CHROME_PATH and ALICE_TOKEN must be set: run this through go test ./examples/conformance -run TestConsole");
const artifacts = path.resolve(process.env.ARTIFACTS_DIR || path.join(here, "artifacts"));
await rm(artifacts, { recursive: true, force: true });
await mkdir(artifacts, { recursive: true });
const axeSource = await readFile(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const WAIT = 30_000;

const browser = await puppeteer.launch({
  executablePath: chrome,
  headless: true,
  // --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
  args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"],
});
const page = await browser.newPage();
await page.setViewport({ width: 1200, height: 900 });
const problems = [];
page.on("pageerror", (e) => problems.push("page error: " + e.message));
// A CSP violation is a console error ("Refused to …"): none may happen.
page.on("console", (m) => m.type() == "error" && !/status of 40[13]/.test(m.text()) && problems.push("console error: " + m.text()));
page.on("requestfailed", (r) => problems.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`));
page.on("request", (r) => !r.url().startsWith(base) && !r.url().startsWith("data:") && problems.push(`a request off the app's origin: ${r.url()}`));

const step = (s) => console.log(`- ${s}`);
async function waitFor(what, fn, ...args) {
  try {
    await page.waitForFunction(fn, { timeout: WAIT, polling: 100 }, ...args);
  } catch (e) {
    const state = await page.evaluate(() => document.body.innerText);
    throw new Error(`waiting for ${what}: ${e.message}\npage now:\n${state}\n${problems.join("\n")}`);
  }
}
const bodyHas = (s) => waitFor(`"${s}" on the page`, (s) => document.body.innerText.includes(s), s);
const byName = (role, name) => page.locator(`::-p-aria([name="${name}"][role="${role}"])`);
async function shot(name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: false });
}
// axe checks the page as it is; injected over DevTools, not as a page script, so the
// console's CSP stays as strict as it is for users.
async function axe(name) {
  await page.evaluate(axeSource);
  const res = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ["violations"] });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")).slice(0, 3) }));
  });
  const bad = res.filter((v) => v.impact == "serious" || v.impact == "critical");
  for (const v of res) console.log(`  axe ${name}: ${v.impact} ${v.id}: ${v.help} (${v.nodes.join(", ")})`);
  if (bad.length) throw new Error(`axe on ${name}: ${bad.length} serious or critical violations: ${JSON.stringify(bad)}`);
}
async function signIn(email) {
  await byName("textbox", "Email").fill(email);
  await byName("textbox", "Password").fill(password);
  await byName("button", "Sign in").click();
}

try {
  step("the sign-in page");
  await page.goto(`${base}/_engine/console/`);
  await waitFor("the sign-in form", () => !!document.querySelector("form[aria-label='Sign in']"));
  await axe("sign-in");
  await shot("sign-in");

  step("sign in as ops: the flows page lists every flow by name");
  await signIn("ops@example.com");
  await bodyHas("math.add");
  for (const f of ["math.divide", "tools.transfer", "chat.ask", "notes.list"]) await bodyHas(f);
  await axe("flows");
  await shot("flows");

  step("call math.divide through its generated form: DivideByZero");
  await page.evaluate(() => document.querySelector("article[aria-labelledby='flow-math.divide'] details").open = true);
  const form = "form[aria-label='Call math.divide']";
  await page.locator(`${form} ::-p-aria([name="a (required)"])`).fill("1");
  await page.locator(`${form} ::-p-aria([name="b (required)"])`).fill("0");
  await byName("button", "Call math.divide").click();
  await waitFor("the DivideByZero envelope", () => {
    const out = document.querySelector("[aria-label='Reply of math.divide']");
    return out && out.innerText.includes("DivideByZero") && out.innerText.includes("HTTP 400") && out.innerText.includes('"dividend": 1');
  });
  await page.locator("article[aria-labelledby='flow-math.divide']").scroll({ scrollTop: 0 });
  await shot("flows-divide");

  step("the runs page; alice starts an agent run and it appears live");
  await byName("link", "Runs").click();
  await waitFor("the runs page", () => document.querySelector("h1")?.textContent == "Runs");
  const before = await page.evaluate(() => document.querySelectorAll("tbody tr").length);
  // alice's chat: the fake model streams slowly, then asks to transfer 500 (an approval).
  const chat = fetch(`${base}/chat`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${aliceToken}` },
    body: JSON.stringify({ message: "please transfer 500 to bob" }),
  }).then(async (r) => { for await (const _ of r.body) { /* drain */ } });
  await waitFor("alice's run in the list", (n) => {
    const rows = [...document.querySelectorAll("tbody tr")];
    return rows.length > n && rows.some((r) => r.innerText.includes("chat.ask") && r.innerText.includes("alice@example.com"));
  }, before);
  await axe("runs");
  await shot("runs");

  step("open the run and watch its transcript grow");
  const runLink = await page.evaluateHandle(() => [...document.querySelectorAll("tbody tr")].find((r) => r.innerText.includes("chat.ask")).querySelector("a"));
  await runLink.click();
  await waitFor("the transcript", () => (document.querySelector("[aria-label='Transcript']")?.innerText || "").length > 0);
  const first = await page.evaluate(() => document.querySelector("[aria-label='Transcript']").innerText.length);
  await waitFor("the transcript growing", (n) => document.querySelector("[aria-label='Transcript']").innerText.length > n, first);
  await waitFor("the transfer's tool call", () => document.querySelector("[aria-label='Transcript']").innerText.includes("tools.transfer"));
  await bodyHas("waiting for approval");
  await axe("run");
  await shot("run-parked");
  const runURL = page.url();

  step("approve the transfer from Approvals");
  await byName("link", "Approvals").click();
  await waitFor("the approval", () => !!document.querySelector("article[aria-label^='Approval: tools.transfer']"));
  await waitFor("the amount the model chose", () =>
    document.querySelector("article[aria-label^='Approval: tools.transfer'] input[type=number]")?.value == "500");
  await axe("approvals");
  await shot("approvals");
  await byName("button", "Approve").click();
  await bodyHas("Approved.");

  step("the run finishes");
  await page.goto(runURL);
  await waitFor("the finished run", () => document.querySelector(".status-completed") && document.body.innerText.includes("Stop reason"));
  await bodyHas("Done:");
  if (/\[object |\bnull\b/.test(await page.evaluate(() => document.querySelector("main").innerText.replace(/"[^"]*"|: null/g, "")))) {
    throw new Error("the run's page shows [object …] or null where content belongs");
  }
  await axe("run-finished");
  await shot("run");
  await chat;

  step("health");
  await byName("link", "Health").click();
  await bodyHas("Scheduled flows");
  await bodyHas("jobs.tick");
  await axe("health");
  await shot("health");

  step("an expired access token is renewed with the refresh token, and the page goes on");
  await page.evaluate(() => sessionStorage.setItem("engine.console.token", "an-expired-token"));
  await byName("link", "Runs").click();
  await waitFor("the runs list after the renewal", () => [...document.querySelectorAll("tbody tr")].some((r) => r.innerText.includes("chat.ask")));
  if (await page.evaluate(() => sessionStorage.getItem("engine.console.token")) == "an-expired-token") throw new Error("the token was not renewed");

  step("keyboard only: from the page's content, Shift+Tab back to the Approvals link, Enter, then to Runs");
  await page.goto(`${base}/_engine/console/#/flows`);
  await bodyHas("math.add");
  for (const want of ["Approvals", "Runs"]) {
    let found = false;
    for (let i = 0; i < 12 && !found; i++) {
      await page.keyboard.down("Shift");
      await page.keyboard.press("Tab");
      await page.keyboard.up("Shift");
      found = await page.evaluate((w) => document.activeElement?.textContent == w && document.activeElement.tagName == "A", want);
    }
    if (!found) throw new Error(`Tab never reached the ${want} link`);
    await page.keyboard.press("Enter");
    await waitFor(`the ${want} page by keyboard`, (w) => document.querySelector("h1")?.textContent == w, want);
    if (await page.evaluate(() => document.activeElement?.id) != "main") throw new Error("focus did not move to the page's content");
  }

  step("sign out ends the session; alice is refused and sees no flow names");
  const spent = await page.evaluate(() => sessionStorage.getItem("engine.console.refresh"));
  await byName("button", "Sign out").click();
  await waitFor("the sign-in form", () => !!document.querySelector("form[aria-label='Sign in']"));
  const again = await fetch(`${base}/auth/refresh`, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ refreshToken: spent }) });
  if (!spent || again.status != 401) throw new Error(`the signed-out session's refresh token still works: HTTP ${again.status}`);
  await signIn("alice@example.com");
  await bodyHas("Refused: only operators may use the console.");
  const text = await page.evaluate(() => document.body.innerText);
  for (const f of ["math.", "tools.", "chat.", "notes."]) if (text.includes(f)) throw new Error(`alice sees ${f}: ${text}`);
  if (await page.evaluate(() => !document.getElementById("nav").hidden)) throw new Error("alice sees the navigation");
  await axe("refused");
  await shot("refused");

  const bad = problems.filter((p) => !p.startsWith("console error: Failed to load resource"));
  if (bad.length) throw new Error("problems:\n" + bad.join("\n"));
  console.log("ok");
} catch (e) {
  await page.screenshot({ path: path.join(artifacts, "failure.png") }).catch(() => {});
  console.error(e);
  process.exitCode = 1;
} finally {
  await browser.close();
}
