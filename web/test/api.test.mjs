// The JavaScript API of weft-wasm, in Node.js.
import test from "node:test";
import assert from "node:assert/strict";
import weft from "./load.mjs";

const { Doc, UndoManager, Presence, VersionVector, Cursor } = weft;

function sync(a, b) {
  a.import(b.export({ mode: "update", from: a.version() }));
  b.import(a.export({ mode: "update", from: b.version() }));
}

test("two documents edit concurrently and converge, in UTF-16 positions", () => {
  const a = new Doc();
  const b = new Doc();
  a.setPeerId("1");
  b.setPeerId(2n);
  assert.equal(a.peerId, "1");
  a.getText("t").insert(0, "héllo 😀 world");
  a.commit();
  b.import(a.export());
  // "😀" is two UTF-16 units: position 8 is right after it.
  b.getText("t").insert(8, "!");
  a.getText("t").delete(0, 1);
  a.getText("t").insert(0, "H");
  a.commit();
  b.commit();
  sync(a, b);
  assert.equal(a.getText("t").toString(), "Héllo 😀! world");
  assert.equal(b.getText("t").toString(), a.getText("t").toString());
  assert.equal(a.getText("t").length, 15);
  assert.ok(a.version().equals(b.version()));
  assert.deepEqual(a.version().toJSON(), { 1: 15, 2: 1 });
});

test("events carry Quill deltas in UTF-16 units, with origin and trigger", () => {
  const a = new Doc();
  const b = new Doc();
  const seen = [];
  const off = b.subscribe((e) => seen.push(e));
  a.getText("t").insert(0, "😀a");
  a.commit({ origin: "typing" });
  b.import(a.export(), "network");
  a.getText("t").insert(2, "b");
  a.getText("t").mark({ start: 0, end: 3 }, "bold", true);
  a.commit();
  b.import(a.export({ mode: "update", from: b.version() }));
  off();
  a.getText("t").insert(0, "z");
  a.commit();
  b.import(a.export({ mode: "update", from: b.version() }));
  assert.equal(seen.length, 2);
  assert.equal(seen[0].by, "import");
  assert.equal(seen[0].origin, "network");
  assert.deepEqual(seen[0].texts, [{ name: "t", delta: [{ insert: "😀a" }] }]);
  assert.deepEqual(seen[1].texts[0].delta, [
    { retain: 2, attributes: { bold: true } },
    { insert: "b", attributes: { bold: true } },
  ]);
});

test("a listener may edit the document it listens to", () => {
  const doc = new Doc();
  const t = doc.getText("t");
  const seen = [];
  doc.subscribe((e) => {
    seen.push(e.texts[0]?.delta);
    if (t.toString() === "a") {
      t.insert(1, "b");
      doc.commit();
    }
  });
  t.insert(0, "a");
  doc.commit();
  assert.equal(t.toString(), "ab");
  assert.deepEqual(seen, [[{ insert: "a" }], [{ retain: 1 }, { insert: "b" }]]);
});

test("hostile bytes throw an Error with Weft's message and change nothing", () => {
  const a = new Doc();
  a.getText("t").insert(0, "keep me");
  a.getMap("m").set("k", 1);
  a.commit();
  const good = new Doc();
  good.getText("t").insert(0, "other text");
  good.commit();
  const update = good.export({ mode: "update" });
  const snapshot = good.export({ mode: "snapshot" });
  const before = JSON.stringify(a.toJSON());
  const version = a.version();
  let seed = 7;
  const rand = (n) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
  let thrown = 0;
  for (const bytes of [update, snapshot]) {
    for (let cut = 0; cut < bytes.length; cut++) {
      try {
        a.import(bytes.slice(0, cut));
      } catch (e) {
        assert.ok(e instanceof Error && e.message.length > 0);
        thrown++;
      }
    }
    for (let i = 0; i < 300; i++) {
      const copy = bytes.slice();
      copy[rand(copy.length)] ^= 1 << rand(8);
      try {
        a.import(copy);
      } catch (e) {
        assert.ok(e instanceof Error);
        thrown++;
      }
      // Either refused whole, or (a flip the checksums cannot see) it is
      // a valid export of `good`'s ops; undo that by reloading.
      if (!a.version().equals(version)) {
        a.free();
        return assert.fail("a corrupted export imported");
      }
    }
  }
  assert.ok(thrown > update.length);
  for (const junk of [new Uint8Array(0), new Uint8Array([0xff, 1, 2]), new Uint8Array(1000)]) {
    assert.throws(() => a.import(junk), Error);
  }
  assert.equal(JSON.stringify(a.toJSON()), before);
  // The document still works.
  a.getText("t").insert(7, "!");
  a.commit();
  assert.equal(a.getText("t").toString(), "keep me!");
});

test("bad arguments throw and change nothing", () => {
  const doc = new Doc();
  const t = doc.getText("t");
  t.insert(0, "😀x");
  assert.throws(() => t.insert(99, "a"), /out of bounds/);
  assert.throws(() => t.insert(1, "a"), Error); // inside a surrogate pair
  assert.throws(() => t.delete(0, 99), Error);
  assert.throws(() => t.mark({ start: 2, end: 1 }, "bold", true), /ends before/);
  assert.throws(() => t.mark({ start: 0 }, "bold", true), Error);
  const cyclic = {};
  cyclic.self = cyclic;
  assert.throws(() => doc.getMap("m").set("k", cyclic), /deeper/);
  assert.throws(() => doc.getMap("m").set("k", () => 1), Error);
  assert.throws(() => t.applyDelta([{ retain: 1 }, { delete: 50 }]), Error);
  assert.throws(() => t.applyDelta("nope"), Error);
  assert.throws(() => doc.checkout([{ peer: "5", counter: 99 }]), Error);
  assert.throws(() => doc.setPeerId("not a number"), Error);
  assert.throws(() => Cursor.decode(new Uint8Array([1, 2, 3])), Error);
  assert.throws(() => VersionVector.decode(new Uint8Array([5])), Error);
  assert.equal(t.toString(), "😀x");
  assert.equal(doc.getMap("m").size, 0);
});

test("maps, embeds, blocks and marks round-trip through snapshots", () => {
  const a = new Doc();
  a.getMap("meta").set("title", "Notes");
  a.getMap("meta").set("tags", ["a", { deep: [1, 2.5, null, true] }]);
  a.getMap("meta").set("big", 2n ** 60n);
  const t = a.getText("body");
  t.applyDelta([
    { insert: "Plan" },
    { insert: "\n", attributes: { header: 1 } },
    { insert: "pack", attributes: { bold: true } },
    { insert: { image: "cat.png" } },
    { insert: "\n", attributes: { list: "bullet" } },
  ]);
  a.commit();
  const b = new Doc();
  b.import(a.export({ mode: "snapshot" }));
  assert.deepEqual(b.getMap("meta").toJSON(), { big: 2n ** 60n, tags: ["a", { deep: [1, 2.5, null, true] }], title: "Notes" });
  assert.deepEqual(b.getText("body").toDelta(), t.toDelta());
  assert.deepEqual(b.getText("body").blocks().map((x) => [x.start, x.end, x.attributes]), [
    [0, 4, { header: 1 }],
    [5, 10, { list: "bullet" }],
  ]);
  assert.deepEqual(b.getText("body").getAttributes(5), { bold: true });
  b.getText("body").updateBlock(4, { header: null, list: "ordered" });
  b.getText("body").splitBlock(2, {});
  b.getText("body").joinBlock(2);
  b.commit();
  a.import(b.export({ mode: "update", from: a.version() }));
  assert.deepEqual(a.getText("body").blocks()[0].attributes, { list: "ordered" });
  assert.deepEqual(a.toJSON(), b.toJSON());
});

test("checkout, forkAt, revertTo and changes work on versions", () => {
  const doc = new Doc();
  const t = doc.getText("t");
  t.insert(0, "one");
  doc.commit({ message: "first", timestamp: 1_700_000_000 });
  const v1 = doc.frontiers();
  t.insert(3, " two");
  doc.commit({ timestamp: true });
  doc.checkout(v1);
  assert.equal(t.toString(), "one");
  assert.ok(doc.isDetached());
  doc.checkoutToLatest();
  assert.equal(t.toString(), "one two");
  assert.equal(doc.forkAt(v1).getText("t").toString(), "one");
  const changes = doc.changes();
  assert.equal(changes[0].message, "first");
  assert.equal(changes[0].timestamp, 1_700_000_000);
  // `timestamp: true` reads JavaScript's clock (Date.now) through weft::platform.
  assert.ok(Math.abs(changes[1].timestamp - Date.now() / 1000) < 60, String(changes[1].timestamp));
  doc.revertTo(v1);
  doc.commit();
  assert.equal(t.toString(), "one");
});

test("undo restores what this user deleted, not a peer's edits", () => {
  const a = new Doc();
  const b = new Doc();
  const undo = new UndoManager(a);
  a.getText("t").insert(0, "hello world");
  a.commit();
  undo.checkpoint();
  sync(a, b);
  a.getText("t").delete(0, 6);
  a.commit();
  b.getText("t").insert(11, "!");
  b.commit();
  sync(a, b);
  assert.equal(a.getText("t").toString(), "world!");
  assert.ok(undo.undo());
  assert.equal(a.getText("t").toString(), "hello world!");
  assert.ok(undo.canRedo());
  assert.ok(undo.redo());
  assert.equal(a.getText("t").toString(), "world!");
});

test("cursors and presence travel as bytes", () => {
  const a = new Doc();
  a.getText("t").insert(0, "abc");
  const c = a.getText("t").cursor(1);
  a.getText("t").insert(0, "xx");
  assert.equal(a.getCursorPos(Cursor.decode(c.encode())), 3);
  const p1 = new Presence(30_000);
  const p2 = new Presence(30_000);
  const events = [];
  p2.subscribe((e) => events.push(e));
  p1.subscribeLocalUpdates((bytes) => p2.apply(bytes));
  p1.set("user:1", { name: "Ana", cursor: Array.from(c.encode()) });
  assert.deepEqual(p2.get("user:1").name, "Ana");
  p1.delete("user:1");
  assert.equal(p2.get("user:1"), undefined);
  assert.deepEqual(events.map((e) => [e.by, e.added, e.removed]), [
    ["import", ["user:1"], []],
    ["import", [], ["user:1"]],
  ]);
  assert.throws(() => p2.apply(new Uint8Array([9, 9, 9])), Error);
});

test("two fresh documents pick different peer ids (entropy from crypto.getRandomValues)", () => {
  const ids = new Set();
  for (let i = 0; i < 50; i++) {
    const d = new Doc();
    ids.add(d.peerId);
    d.free();
  }
  assert.equal(ids.size, 50);
});
