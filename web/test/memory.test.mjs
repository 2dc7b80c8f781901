// Memory is released: by free(), and by the garbage collector for
// documents that were dropped without it (FinalizationRegistry).
import test from "node:test";
import assert from "node:assert/strict";
import weft from "./load.mjs";

const { Doc } = weft;

function wasmBytes() {
  return weft.wasmMemoryBytes();
}

// A handle (a text, a map, an undo manager) keeps its document alive:
// free it too, or leave it to the garbage collector.
function work(d) {
  const t = d.getText("t");
  for (let i = 0; i < 200; i++) t.insert(t.length, `line ${i} of some text\n`);
  d.commit();
  t.free();
  return d.export({ mode: "snapshot" });
}

test("a long run that frees its documents keeps memory flat", () => {
  for (let i = 0; i < 100; i++) {
    const d = new Doc();
    work(d);
    d.free();
  }
  const base = wasmBytes();
  const live = weft.liveDocuments();
  for (let i = 0; i < 2000; i++) {
    const d = new Doc();
    work(d);
    d.free();
  }
  const after = wasmBytes();
  assert.equal(weft.liveDocuments(), live);
  assert.ok(after <= base + (1 << 20), `wasm memory grew from ${base} to ${after} bytes`);
});

test("documents dropped without free() are released by the garbage collector", async () => {
  assert.equal(typeof globalThis.gc, "function", "run with node --expose-gc");
  const live = () => weft.liveDocuments();
  const start = live();
  for (let i = 0; i < 500; i++) new Doc().getText("t").insert(0, "dropped, never freed");
  assert.ok(live() >= start + 500);
  for (let round = 0; round < 50 && live() > start + 10; round++) {
    globalThis.gc();
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(live() <= start + 10, `${live() - start} documents still alive`);
});
