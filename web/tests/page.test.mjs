// The page in headless Chromium (Debian's, driven by puppeteer-core): it loads without console errors, its
// scenarios show exactly the command line's numbers, bad input is named beside its field, and the URL holds the
// whole state. Screenshots of some scenarios go to $GPUPLAN_SCREENSHOTS; the timings are printed, not asserted.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import puppeteer from "puppeteer-core";

import { cli, estimateNumbers, planNumbers, sizeNumbers, topoNumbers } from "./expected.mjs";
import { queryString, SCENARIOS } from "./scenarios.mjs";
import { serve } from "./serve.mjs";

const dist = join(dirname(fileURLToPath(import.meta.url)), "..", "dist");
const screenshots = process.env.GPUPLAN_SCREENSHOTS;
const SCREENSHOT_SCENARIOS = new Set(["dense", "search", "topology", "does-not-fit", "size"]);

let server, browser;
// Console errors, uncaught exceptions, failed and outside requests of each page opened, by page.
const problemsOf = new WeakMap();
const problems = (page) => problemsOf.get(page);

before(async () => {
  server = await serve(dist);
  browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"],
  });
  if (screenshots) mkdirSync(screenshots, { recursive: true });
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function openPage(query = "", viewport = { width: 1280, height: 800 }) {
  const page = await browser.newPage();
  await page.setViewport(viewport);
  const seen = [];
  problemsOf.set(page, seen);
  page.on("console", (message) => {
    if (message.type() === "error") seen.push(`console: ${message.text()} (${message.location()?.url ?? ""})`);
  });
  page.on("pageerror", (error) => seen.push(`exception: ${error.message}`));
  page.on("requestfailed", (request) => seen.push(`request failed: ${request.url()}`));
  page.on("response", (response) => {
    if (response.status() >= 400) seen.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  // Only the page's own host: anything else would be a fetch from the network at run time. (Observed, not
  // intercepted: Chromium's interception stalls a dedicated worker's fetches on a reload.)
  page.on("request", (request) => {
    if (!request.url().startsWith(server.url) && !request.url().startsWith("data:")) seen.push(`network: ${request.url()}`);
  });
  await page.goto(`${server.url}${query}`);
  await settled(page);
  return page;
}

// Waits until the page has answered (or named an error) for its current state.
async function settled(page) {
  await page.waitForFunction(() => ["done", "error"].includes(document.body.dataset.ready), { timeout: 60000 });
  return page.evaluate(() => document.body.dataset.ready);
}

// Every number the page shows with a key: {key: exact value}.
function shownNumbers(page) {
  return page.evaluate(() => Object.fromEntries([...document.querySelectorAll("[data-key]")]
    .map((node) => [node.dataset.key, Number(node.dataset.value)])));
}

function expectedNumbers(scenario) {
  const result = cli(scenario.cli);
  const numbers = { plan: planNumbers, size: sizeNumbers, estimate: estimateNumbers }[scenario.cli[0]](result);
  return scenario.topo ? { ...numbers, ...topoNumbers(cli(scenario.topo)) } : numbers;
}

describe("the page", () => {
  test("loads with no console errors and fetches nothing from elsewhere", async () => {
    const page = await openPage();
    assert.equal(await page.evaluate(() => document.body.dataset.ready), "done");
    assert.ok(await page.$("#memory svg rect"), "the memory chart is drawn");
    await page.close();
    assert.deepEqual(problems(page), []);
  });

  for (const scenario of SCENARIOS) {
    test(`${scenario.name}: the numbers are the command line's`, async () => {
      const page = await openPage(queryString(scenario.query));
      assert.equal(await page.evaluate(() => document.body.dataset.ready), "done",
                   await page.evaluate(() => document.getElementById("status").textContent));
      const shown = await shownNumbers(page);
      const expected = expectedNumbers(scenario);
      assert.deepEqual(shown, expected);
      if (scenario.name === "does-not-fit") {
        assert.match(await page.$eval("#memory .does-not-fit", (n) => n.textContent), /Does not fit/);
        assert.ok(Object.keys(expected).some((k) => k.startsWith("change.")), "the CLI suggests changes");
      }
      if (scenario.name === "search")
        console.log(`search (GPT-3 175B on 256 A100): ${await page.evaluate(() => document.body.dataset.lastAnswerMs)} ms in the worker`);
      if (screenshots && SCREENSHOT_SCENARIOS.has(scenario.name)) {
        await page.screenshot({ path: join(screenshots, `${scenario.name}-1280x800.png`), fullPage: false });
        await page.setViewport({ width: 390, height: 844, isMobile: true, deviceScaleFactor: 1 });
        await settled(page);
        // On a phone the form comes first: the picture is of the answer below it.
        await page.$eval("#output", (n) => n.scrollIntoView());
        await page.screenshot({ path: join(screenshots, `${scenario.name}-390x844.png`), fullPage: false });
      }
      await page.close();
      assert.deepEqual(problems(page), []);
    });
  }
});

describe("weight", () => {
  test("the WebAssembly is under 2 MB gzipped and the whole page under 3 MB", () => {
    const gzipped = Object.fromEntries(readdirSync(dist).map((file) =>
      [file, gzipSync(readFileSync(join(dist, file)), { level: 9 }).length]));
    const total = Object.values(gzipped).reduce((sum, bytes) => sum + bytes, 0);
    console.log(`gzipped: gpuplan.wasm ${gzipped["gpuplan.wasm"]} bytes, the page ${total} bytes`);
    assert.ok(gzipped["gpuplan.wasm"] < 2e6, `${gzipped["gpuplan.wasm"]} bytes`);
    assert.ok(total < 3e6, `${total} bytes`);
  });
});

describe("bad input", () => {
  const cases = [
    { name: "a TP that does not divide the heads", query: { tp: 3 }, field: "tp", message: /--?tp|tp: 3/ },
    { name: "malformed config.json", query: { config: "{ not json" }, field: "config", message: /config/ },
    { name: "a topology that is not nvidia-smi output", query: { topology: "hello\nworld\n" }, field: "topology",
      message: /./ },
    { name: "zero nodes", query: { nodes: 0 }, field: "nodes", message: /nodes: 0/ },
    { name: "a sequence length that is not a number", query: { seq_len: "abc" }, field: "seq_len", message: /abc/ },
    { name: "Transformer Engine's flash kernel under torchtitan",
      query: { framework: "torchtitan", attention_backend: "flash", tp: 1, pp: 1, zero: 3, sequence_parallel: 0 },
      field: "attention_backend", message: /flash with torchtitan/ },
    { name: "ZeRO-1 under torchtitan", query: { framework: "torchtitan" }, field: "zero", message: /no ZeRO-1/ },
    { name: "an MoE capacity factor that is not a number",
      query: { model: "mixtral-8x7b", moe_capacity_factor: "lots" }, field: "moe_capacity_factor", message: /lots/ },
  ];
  for (const c of cases) {
    test(`${c.name}: the library's message beside the field`, async () => {
      const page = await openPage(queryString(c.query));
      assert.equal(await page.evaluate(() => document.body.dataset.ready), "error");
      const message = await page.$eval(`[data-error-for="${c.field}"]`, (n) => n.textContent);
      assert.match(message, c.message);
      assert.match(message, /accepted/);
      assert.equal(await page.$eval(`[name="${c.field}"]`, (n) => n.getAttribute("aria-invalid")), "true");
      await page.close();
      assert.deepEqual(problems(page), []);
    });
  }
});

describe("the URL", () => {
  test("holds the whole state: a copied link shows the same answer", async () => {
    const page = await openPage();
    await page.select("#model", "llama-3.1-8b");
    await settled(page);
    await clearAndType(page, "#tp", "4");
    await settled(page);
    const url = page.url();
    const numbers = await shownNumbers(page);
    const copy = await openPage(url.slice(server.url.length));
    assert.equal(await copy.$eval("#model", (n) => n.value), "llama-3.1-8b");
    assert.equal(await copy.$eval("#tp", (n) => n.value), "4");
    assert.deepEqual(await shownNumbers(copy), numbers);
    await copy.close();
    await page.close();
    assert.deepEqual(problems(page), []);
  });

  test("a link with an unknown question opens the layout check", async () => {
    const page = await openPage("?mode=bogus");
    assert.equal(await page.evaluate(() => document.body.dataset.ready), "done");
    assert.equal(await page.$eval('input[name="mode"]:checked', (n) => n.value), "check");
    await page.close();
    assert.deepEqual(problems(page), []);
  });

  test("back and forward restore the previous and next questions", async () => {
    const page = await openPage();
    const first = await shownNumbers(page);
    await page.select("#model", "llama-3.1-8b");
    await settled(page);
    const second = await shownNumbers(page);
    assert.notDeepEqual(second, first);
    await page.goBack();
    await settled(page);
    assert.equal(await page.$eval("#model", (n) => n.value), "llama-3.1-70b");
    assert.deepEqual(await shownNumbers(page), first);
    await page.goForward();
    await settled(page);
    assert.deepEqual(await shownNumbers(page), second);
    await page.close();
    assert.deepEqual(problems(page), []);
  });
});

describe("speed", () => {
  test("an estimate answers as the user types (timed, not asserted)", async () => {
    const page = await openPage();
    const times = [];
    for (const seq of ["4096", "2048", "16384", "8192"]) {
      await clearAndType(page, "#seq_len", seq);
      await page.waitForFunction((s) => document.body.dataset.ready === "done" &&
        new URL(location.href).searchParams.get("seq_len") === (s === "8192" ? null : s), {}, seq);
      times.push(Number(await page.evaluate(() => document.body.dataset.lastRenderMs)));
    }
    console.log(`estimate, input change to redrawn chart: ${times.map((t) => `${t} ms`).join(", ")}`);
    await page.close();
    assert.deepEqual(problems(page), []);
  });
});

async function clearAndType(page, selector, text) {
  await page.$eval(selector, (n) => { n.value = ""; });
  await page.type(selector, text);
}
