// The demo editor in a real browser: Playwright (playwright-core) drives
// Debian's Chromium headless against a local weft-server that serves the
// page (--static web/dist) and syncs it. Run `npm run build` first.
import test from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { chromium } from "playwright-core";
import { startServer } from "../test/server.mjs";

const dist = new URL("../dist/", import.meta.url).pathname;
const artifacts = new URL("../test-results/", import.meta.url).pathname;
const executablePath = process.env.CHROMIUM ?? "/usr/bin/chromium";
// Chromium on a machine without a network: no background connections.
const args = [
  "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
  "--disable-component-update", "--disable-sync", "--disable-default-apps",
];

let server;
let browser;
const serverArgs = ["--static", dist];

test.before(async () => {
  server = await startServer({ args: serverArgs });
  browser = await chromium.launch({ executablePath, args, headless: true });
});

test.after(async () => {
  await browser?.close();
  await server?.stop();
  server?.remove();
});

/** Opens the editor on `doc` as `name` in a new browser context. */
async function open(doc, name) {
  const context = await browser.newContext({ viewport: { width: 900, height: 700 } });
  const page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(`${server.http}?doc=${doc}&name=${name}`);
  await waitSynced(page);
  return { page, errors };
}

async function waitSynced(page, timeout = 20_000) {
  await page.waitForFunction(() => window.weftDemo?.client.isSynced, null, { timeout, polling: 50 });
}

/** What the page shows, and whether Quill and Weft agree on it. */
async function content(page) {
  return page.evaluate(() => {
    const { quill, doc } = window.weftDemo;
    // Adjacent inserts with the same attributes as one op (as Quill keeps them).
    const normal = (ops) => {
      const out = [];
      for (const op of ops) {
        const last = out[out.length - 1];
        const attrs = JSON.stringify(op.attributes ?? {});
        if (last && typeof last.insert === "string" && typeof op.insert === "string" && JSON.stringify(last.attributes ?? {}) === attrs) {
          last.insert += op.insert;
        } else {
          // One key order: insert, then attributes when there are some.
          out.push(op.attributes && Object.keys(op.attributes).length ? { insert: op.insert, attributes: op.attributes } : { insert: op.insert });
        }
      }
      return JSON.stringify(out);
    };
    const text = doc.getText("body");
    const shown = normal(quill.getContents().ops);
    const weft = normal(text.toQuillDelta());
    text.free();
    return { text: quill.getText(), ops: quill.getContents().ops, agree: shown === weft, weft };
  });
}

async function converged(pages, check = () => true, timeout = 20_000) {
  const end = Date.now() + timeout;
  for (;;) {
    const all = await Promise.all(pages.map(content));
    const same = all.every((c) => c.agree && JSON.stringify(c.ops) === JSON.stringify(all[0].ops));
    if (same && check(all[0])) return all[0];
    if (Date.now() > end) {
      throw new Error(`pages did not converge: ${JSON.stringify(all.map((c) => [c.text, c.agree, c.weft]))}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function typeAtEnd(page, text) {
  await page.click(".ql-editor");
  await page.keyboard.press("Control+End");
  await page.keyboard.type(text, { delay: 5 });
}

/**
 * Whether `text` is one of `x`, `y` whole inside the other at one place
 * (before it, after it, or between two of its chars).
 */
function oneInsideTheOther(text, x, y) {
  const inside = (outer, inner) => {
    for (let i = 0; i <= outer.length; i++) {
      if (text === outer.slice(0, i) + inner + outer.slice(i)) return true;
    }
    return false;
  };
  return inside(x, y) || inside(y, x);
}

test("two pages type concurrently into Quill and converge", async () => {
  const a = await open("concurrent", "Ana");
  const b = await open("concurrent", "Ben");
  const ana = "Ana types here. ";
  const ben = "Ben types too. ";
  await Promise.all([typeAtEnd(a.page, ana), typeAtEnd(b.page, ben)]);
  // Both pages show both texts whole, one after the other or one inside
  // the other: where depends on when each page saw the other's first keys
  // (Ben's "end" may come just after Ana's "A", and his text then goes
  // where her caret is: seen twice in CI). Never mixed char by char.
  const c = await converged([a.page, b.page], (c) => oneInsideTheOther(c.text.slice(0, -1), ana, ben));
  assert.equal(c.text.length, (ana + ben + "\n").length, c.text);
  assert.deepEqual([...a.errors, ...b.errors], []);
  await a.page.context().close();
  await b.page.context().close();
});

test("a header set on one line never spreads onto the other user's typing on the next", async () => {
  const a = await open("lines", "Ana");
  const b = await open("lines", "Ben");
  await typeAtEnd(a.page, "Title");
  await a.page.keyboard.press("Enter");
  await a.page.keyboard.type("body");
  await converged([a.page, b.page], (c) => c.text === "Title\nbody\n");
  // Ana makes line 1 a header while Ben types at the start of line 2.
  await Promise.all([
    a.page.evaluate(() => window.weftDemo.quill.formatLine(0, 1, "header", 1, "user")),
    b.page.evaluate(() => {
      const q = window.weftDemo.quill;
      q.setSelection(6, 0, "user");
    }).then(() => b.page.keyboard.type("B ")),
  ]);
  const c = await converged([a.page, b.page], (c) => c.text === "Title\nB body\n");
  assert.deepEqual(c.ops, [{ insert: "Title" }, { attributes: { header: 1 }, insert: "\n" }, { insert: "B body\n" }]);
  await a.page.context().close();
  await b.page.context().close();
});

test("a page offline keeps typing and converges when the server returns", async () => {
  const a = await open("offline", "Ana");
  const b = await open("offline", "Ben");
  await typeAtEnd(a.page, "saved. ");
  await converged([a.page, b.page], (c) => c.text === "saved. \n");
  await server.kill();
  await a.page.waitForFunction(() => window.weftDemo.client.state.status !== "connected");
  await Promise.all([typeAtEnd(a.page, "Ana offline. "), typeAtEnd(b.page, "Ben offline. ")]);
  server = await startServer({ listen: server.addr, dir: server.dir, args: serverArgs });
  await Promise.all([waitSynced(a.page, 30_000), waitSynced(b.page, 30_000)]);
  const c = await converged([a.page, b.page], (c) => c.text.includes("Ana offline.") && c.text.includes("Ben offline."));
  assert.ok(c.text.startsWith("saved. "), c.text);
  await a.page.context().close();
  await b.page.context().close();
});

test("undo restores exactly what this user deleted, keeping the other's edits", async () => {
  const a = await open("undo", "Ana");
  const b = await open("undo", "Ben");
  await typeAtEnd(a.page, "keep this sentence");
  await converged([a.page, b.page], (c) => c.text === "keep this sentence\n");
  // A pause: the typing and the deleting are two undo steps.
  await a.page.evaluate(() => window.weftDemo.binding.undoManager.checkpoint());
  // Ana deletes " sentence" (9 chars) with Backspace.
  await a.page.keyboard.press("Control+End");
  for (let i = 0; i < 9; i++) await a.page.keyboard.press("Backspace");
  await converged([a.page, b.page], (c) => c.text === "keep this\n");
  // Ben types at the start.
  await b.page.evaluate(() => window.weftDemo.quill.setSelection(0, 0, "user"));
  await b.page.keyboard.type(">> ");
  await converged([a.page, b.page], (c) => c.text === ">> keep this\n");
  await a.page.keyboard.press("Control+z");
  const c = await converged([a.page, b.page], (c) => c.text === ">> keep this sentence\n");
  assert.equal(c.text, ">> keep this sentence\n");
  await a.page.keyboard.press("Control+Shift+z");
  await converged([a.page, b.page], (c) => c.text === ">> keep this\n");
  await a.page.context().close();
  await b.page.context().close();
});

test("remote carets appear, a reload restores the document from the server, and a screenshot is saved", async () => {
  // Two editors side by side in one page, for the screenshot.
  const context = await browser.newContext({ viewport: { width: 1400, height: 560 } });
  const page = await context.newPage();
  await page.setContent(`<!doctype html><body style="margin:0;display:flex;gap:8px;background:#ccc">
    <iframe id="a" src="${server.http}?doc=tour&name=Ana" style="width:50%;height:550px;border:0"></iframe>
    <iframe id="b" src="${server.http}?doc=tour&name=Ben" style="width:50%;height:550px;border:0"></iframe></body>`);
  const frames = async () => {
    const fa = await (await page.$("#a")).contentFrame();
    const fb = await (await page.$("#b")).contentFrame();
    return [fa, fb];
  };
  let [fa, fb] = await frames();
  for (const f of [fa, fb]) await f.waitForFunction(() => window.weftDemo?.client.isSynced, null, { timeout: 20_000 });
  await fa.click(".ql-editor");
  await page.keyboard.type("Weft in the browser");
  await page.keyboard.press("Enter");
  await page.keyboard.type("Two people edit one document; each sees the other's caret.");
  await fa.evaluate(() => window.weftDemo.quill.formatLine(0, 1, "header", 1, "user"));
  await fa.evaluate(() => window.weftDemo.quill.formatText(20, 3, "bold", true, "user"));
  await fb.waitForFunction(() => window.weftDemo.quill.getText().includes("caret."));
  await fb.click(".ql-editor");
  await fb.evaluate(() => window.weftDemo.quill.setSelection(24, 6, "user"));
  await fa.evaluate(() => window.weftDemo.quill.setSelection(7, 0, "user"));
  await fb.waitForSelector('.weft-caret[data-name="Ana"]', { timeout: 10_000 });
  await fa.waitForSelector('.weft-caret[data-name="Ben"]', { timeout: 10_000 });
  mkdirSync(artifacts, { recursive: true });
  await page.screenshot({ path: `${artifacts}editors.png` });
  const before = await fb.evaluate(() => window.weftDemo.quill.getContents().ops);
  // A reload starts from nothing and gets the document from the server.
  await fa.evaluate(() => location.reload());
  [fa, fb] = await frames();
  await fa.waitForFunction(() => window.weftDemo?.client.isSynced, null, { timeout: 20_000 });
  await fa.waitForFunction((n) => window.weftDemo.quill.getText().length === n, before.map((o) => (typeof o.insert === "string" ? o.insert.length : 1)).reduce((x, y) => x + y), { timeout: 10_000 });
  const after = await fa.evaluate(() => window.weftDemo.quill.getContents().ops);
  assert.deepEqual(after, before);
  await context.close();
});
