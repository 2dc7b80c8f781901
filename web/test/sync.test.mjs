// The browser sync client (src/sync.ts) against a real weft-server, in
// Node.js (run with --experimental-websocket on Node 20).
import test from "node:test";
import assert from "node:assert/strict";
import weft from "./load.mjs";
import { startServer, until } from "./server.mjs";

const { Doc, Presence } = weft;

// Every client a test starts, closed after it whatever happens (a client
// left open reconnects for ever and keeps the test process alive).
const clients = [];
// DEBUG=1 logs every WebSocket's open, error and close.
class LogWebSocket extends globalThis.WebSocket {
  constructor(url) {
    super(url);
    const t0 = Date.now();
    for (const ev of ["open", "error", "close"]) {
      this.addEventListener(ev, (e) => console.log(`${url} ${ev} +${Date.now() - t0}ms ${e.code ?? ""}`));
    }
  }
}
class SyncClient extends weft.SyncClient {
  constructor(doc, options) {
    super(doc, process.env.DEBUG ? { WebSocket: LogWebSocket, ...options } : options);
    clients.push(this);
  }
}
test.afterEach(() => {
  for (const c of clients.splice(0)) c.close();
});

test("two clients converge through the server; a third joins later and catches up", async () => {
  const server = await startServer();
  try {
    const a = new Doc();
    const b = new Doc();
    const ca = new SyncClient(a, { url: server.url, docId: "notes" });
    const cb = new SyncClient(b, { url: server.url, docId: "notes" });
    await Promise.all([ca.whenSynced(), cb.whenSynced()]);
    for (let i = 0; i < 50; i++) {
      const [doc, who] = i % 2 ? [a, "a"] : [b, "b"];
      const t = doc.getText("t");
      t.insert(Math.floor(t.length / 2), `${who}${i} `);
      doc.commit();
      if (i % 10 === 0) await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => ca.isSynced && cb.isSynced && a.version().equals(b.version()), 20_000, "convergence");
    assert.equal(a.getText("t").toString(), b.getText("t").toString());
    assert.equal(a.getText("t").toString().split(" ").length - 1, 50);
    const c = new Doc();
    const cc = new SyncClient(c, { url: server.url, docId: "notes" });
    await cc.whenSynced();
    await until(() => c.version().equals(a.version()), 10_000, "catch-up");
    assert.equal(c.getText("t").toString(), a.getText("t").toString());
    for (const x of [ca, cb, cc]) x.close();
  } finally {
    await server.stop();
    server.remove();
  }
});

test("edits made while the server is down are sent when it returns, and nothing acknowledged is lost", async () => {
  const server = await startServer();
  let restarted;
  try {
    const a = new Doc();
    const b = new Doc();
    const opts = { url: server.url, docId: "offline", minBackoffMs: 20, maxBackoffMs: 200, onState: process.env.DEBUG ? (s) => console.log(JSON.stringify(s)) : undefined };
    const ca = new SyncClient(a, opts);
    const cb = new SyncClient(b, opts);
    await Promise.all([ca.whenSynced(), cb.whenSynced()]);
    a.getText("t").insert(0, "acknowledged ");
    a.commit();
    await ca.whenSynced();
    await server.kill(); // kill -9: only what was acknowledged is durable
    a.getText("t").insert(0, "A-offline ");
    a.commit();
    b.getText("t").insert(0, "B-offline ");
    b.commit();
    restarted = await startServer({ listen: server.addr, dir: server.dir });
    await until(() => ca.isSynced && cb.isSynced && a.version().equals(b.version()), 20_000, "reconnect and converge");
    const text = a.getText("t").toString();
    assert.equal(text, b.getText("t").toString());
    for (const part of ["acknowledged", "A-offline", "B-offline"]) assert.ok(text.includes(part), text);
    ca.close();
    cb.close();
    // A fresh client reads everything from the restarted server's store.
    const c = new Doc();
    const cc = new SyncClient(c, opts);
    await cc.whenSynced();
    await until(() => c.getText("t").toString() === text, 10_000, "reload from the store");
    cc.close();
  } finally {
    await server.stop();
    await restarted?.stop();
    server.remove();
  }
});

test("presence reaches the other client and is removed when it leaves", async () => {
  const server = await startServer();
  try {
    const pa = new Presence(30_000);
    const pb = new Presence(30_000);
    const ca = new SyncClient(new Doc(), { url: server.url, docId: "p", presence: pa });
    const cb = new SyncClient(new Doc(), { url: server.url, docId: "p", presence: pb });
    await Promise.all([ca.whenSynced(), cb.whenSynced()]);
    pa.set("user:a", { name: "Ana" });
    await until(() => pb.get("user:a")?.name === "Ana", 10_000, "presence");
    ca.close();
    await until(() => pb.get("user:a") === undefined, 10_000, "presence removal");
    cb.close();
  } finally {
    await server.stop();
    server.remove();
  }
});

test("a client whose server lost the document's history is refused and merges nothing", async () => {
  const first = await startServer();
  let second;
  try {
    const a = new Doc();
    const ca = new SyncClient(a, { url: first.url, docId: "d", minBackoffMs: 20, maxBackoffMs: 100 });
    a.getText("t").insert(0, "old history");
    a.commit();
    await ca.whenSynced();
    await first.kill();
    // Another store on the same address: "d" there is another history.
    second = await startServer({ listen: first.addr });
    const b = new Doc();
    const cb = new SyncClient(b, { url: second.url, docId: "d" });
    b.getText("t").insert(0, "new history");
    b.commit();
    await cb.whenSynced();
    await until(() => ca.state.status === "refused", 20_000, "refusal");
    assert.equal(ca.state.refused.status, "divergent history");
    assert.equal(a.getText("t").toString(), "old history");
    const c = new Doc();
    const cc = new SyncClient(c, { url: second.url, docId: "d" });
    await cc.whenSynced();
    assert.equal(c.getText("t").toString(), "new history");
    for (const x of [ca, cb, cc]) x.close();
  } finally {
    await first.stop();
    await second?.stop();
    first.remove();
    second?.remove();
  }
});
