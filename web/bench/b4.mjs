// B4 (the automerge-paper editing trace) through the JavaScript APIs of
// weft-wasm, loro-crdt and yjs, in one Node process (issue 30,
// "Benchmarks"): replay time, snapshot import + first keystroke, memory
// after the replay, and the gzipped size of the .wasm files.
//
//   web/build.sh && (cd web && npm install) && node --expose-gc web/bench/b4.mjs [--runs N] [--baseline] [--yjs-one-txn]
//
// The trace is read from the repository (traces/sequential/); nothing here
// touches the network.

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gunzipSync, gzipSync } from "node:zlib";
import { performance } from "node:perf_hooks";

const need = async (what, hint) => {
  try {
    return await import(what);
  } catch (e) {
    console.error(`cannot load ${what} (${e.code ?? e.message}): ${hint}`);
    process.exit(2);
  }
};
const { initSync, Doc } = await need("../pkg/weft_wasm.js", "run web/build.sh first");
const { LoroDoc } = await need("loro-crdt", "run npm install in web/ first");
const Y = await need("yjs", "run npm install in web/ first");

const require = createRequire(import.meta.url);

const argRuns = process.argv.indexOf("--runs");
const RUNS = argRuns > 0 ? Number(process.argv[argRuns + 1]) : 5;
const BASELINE = process.argv.includes("--baseline");
const YJS_ONE_TXN = process.argv.includes("--yjs-one-txn");
if (typeof globalThis.gc !== "function") {
  console.error("run with node --expose-gc (memory figures need a full GC)");
  process.exit(2);
}

// ---------------------------------------------------------------- the wasm modules

const weftWasmUrl = new URL("../pkg/weft_wasm_bg.wasm", import.meta.url);
const weftExports = initSync({ module: readFileSync(weftWasmUrl) });
const weftMemory = () => weftExports.memory.buffer.byteLength;
// loro-crdt's Node entry (CommonJS); its glue exports the instance as __wasm.
const loroGluePath = require.resolve("loro-crdt/nodejs/loro_wasm.js");
const loroWasm = require(loroGluePath).__wasm;
const loroMemory = () => loroWasm.memory.buffer.byteLength;

// ---------------------------------------------------------------- the trace

const tracePath = new URL("../../traces/sequential/automerge-paper.json.gz", import.meta.url);
const trace = JSON.parse(gunzipSync(readFileSync(tracePath)).toString("utf8"));

// Flattened patches [pos, del, ins] in UTF-16 units. The trace counts chars
// (Unicode scalar values); they equal UTF-16 units unless some inserted
// text has a char outside the BMP, in which case the positions are
// converted by replaying the trace once over an array of chars.
function utf16Patches(trace) {
  const flat = [];
  for (const txn of trace.txns) for (const p of txn.patches) flat.push(p);
  const astral = /[\u{10000}-\u{10FFFF}]/u;
  if (!flat.some((p) => astral.test(p[2])) && !astral.test(trace.startContent ?? "")) {
    return { patches: flat, converted: false };
  }
  const chars = Array.from(trace.startContent ?? "");
  const u16 = (i) => {
    let n = 0;
    for (let k = 0; k < i; k++) n += chars[k].length;
    return n;
  };
  const out = [];
  for (const [pos, del, ins] of flat) {
    const p16 = u16(pos);
    let d16 = 0;
    for (let k = pos; k < pos + del; k++) d16 += chars[k].length;
    out.push([p16, d16, ins]);
    chars.splice(pos, del, ...Array.from(ins));
  }
  return { patches: out, converted: true };
}

const { patches, converted } = utf16Patches(trace);
const END = trace.endContent;
const P = patches.length;
const pos = new Uint32Array(P);
const del = new Uint32Array(P);
const ins = new Array(P);
for (let i = 0; i < P; i++) [pos[i], del[i], ins[i]] = patches[i];

// ---------------------------------------------------------------- the replays

// Each replay applies every patch (delete, then insert) through the
// library's public text API. weft and loro close one change at the end
// (one commit, as the native B4 figures do; replayCommitEach commits after
// every patch, as an editor binding does per keystroke); yjs makes every
// call its own transaction. check() reads the final text.
// One replay loop per library, written out (not shared): each stays
// monomorphic for the JIT, so no library pays for another's call shapes.
const libs = {
  weft: {
    make() {
      const doc = new Doc();
      return { doc, text: doc.getText("text") };
    },
    replay(s) {
      const t = s.text;
      for (let i = 0; i < P; i++) {
        if (del[i] > 0) t.delete(pos[i], del[i]);
        if (ins[i].length > 0) t.insert(pos[i], ins[i]);
      }
      s.doc.commit();
    },
    replayCommitEach(s) {
      const t = s.text;
      for (let i = 0; i < P; i++) {
        if (del[i] > 0) t.delete(pos[i], del[i]);
        if (ins[i].length > 0) t.insert(pos[i], ins[i]);
        s.doc.commit();
      }
    },
    str: (s) => s.text.toString(),
    snapshot: (s) => s.doc.export({ mode: "snapshot" }),
    load(bytes) {
      const doc = new Doc();
      doc.import(bytes);
      return { doc, text: doc.getText("text") };
    },
    insert: (s, p, x) => s.text.insert(p, x),
    length: (s) => s.text.length,
    free(s) {
      s.text.free();
      s.doc.free();
    },
    wasmMemory: weftMemory,
  },
  loro: {
    make() {
      const doc = new LoroDoc();
      return { doc, text: doc.getText("text") };
    },
    replay(s) {
      const t = s.text;
      for (let i = 0; i < P; i++) {
        if (del[i] > 0) t.delete(pos[i], del[i]);
        if (ins[i].length > 0) t.insert(pos[i], ins[i]);
      }
      s.doc.commit();
    },
    replayCommitEach(s) {
      const t = s.text;
      for (let i = 0; i < P; i++) {
        if (del[i] > 0) t.delete(pos[i], del[i]);
        if (ins[i].length > 0) t.insert(pos[i], ins[i]);
        s.doc.commit();
      }
    },
    str: (s) => s.text.toString(),
    snapshot: (s) => s.doc.export({ mode: "snapshot" }),
    load(bytes) {
      const doc = LoroDoc.fromSnapshot(bytes);
      return { doc, text: doc.getText("text") };
    },
    insert: (s, p, x) => s.text.insert(p, x),
    length: (s) => s.text.length,
    free(s) {
      s.text.free?.();
      s.doc.free();
    },
    wasmMemory: loroMemory,
  },
  yjs: {
    make() {
      const doc = new Y.Doc();
      return { doc, text: doc.getText("text") };
    },
    // Without transact(), every call is its own transaction: how yjs is
    // used and benchmarked (crdt-benchmarks' B4). One transact() around
    // the whole trace is several times slower (--yjs-one-txn, one run).
    replay(s) {
      const t = s.text;
      for (let i = 0; i < P; i++) {
        if (del[i] > 0) t.delete(pos[i], del[i]);
        if (ins[i].length > 0) t.insert(pos[i], ins[i]);
      }
    },
    replayOneTxn(s) {
      const t = s.text;
      s.doc.transact(() => {
        for (let i = 0; i < P; i++) {
          if (del[i] > 0) t.delete(pos[i], del[i]);
          if (ins[i].length > 0) t.insert(pos[i], ins[i]);
        }
      });
    },
    str: (s) => s.text.toString(),
    snapshot: (s) => Y.encodeStateAsUpdate(s.doc),
    load(bytes) {
      const doc = new Y.Doc();
      Y.applyUpdate(doc, bytes);
      return { doc, text: doc.getText("text") };
    },
    insert: (s, p, x) => s.text.insert(p, x),
    length: (s) => s.text.length,
    free: (s) => s.doc.destroy(),
    wasmMemory: null,
  },
  // Baseline (--baseline, one run): the same patches spliced into a plain
  // JS array of UTF-16 units (no CRDT, no rope). Not cheap: seconds, as a
  // plain string (s.slice + s.slice, about 3x slower still) is.
  array: {
    make: () => ({ a: [] }),
    replay(st) {
      const a = st.a;
      for (let i = 0; i < P; i++) a.splice(pos[i], del[i], ...ins[i].split(""));
    },
    str: (st) => st.a.join(""),
    free() {},
  },
};

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const ms = (x) => (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3));
const fmt = (xs) => `${ms(median(xs))} ms (${ms(Math.min(...xs))}-${ms(Math.max(...xs))})`;
const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;
const mb = (n) => `${(n / 1048576).toFixed(2)} MiB`;

function check(name, got) {
  if (got !== END) {
    let i = 0;
    while (i < got.length && got[i] === END[i]) i++;
    throw new Error(`${name}: final text differs from endContent at UTF-16 ${i} (length ${got.length}, want ${END.length})`);
  }
}

function time(f) {
  const t0 = performance.now();
  const r = f();
  return [performance.now() - t0, r];
}

console.log(`node ${process.version}, loro-crdt ${require("loro-crdt/package.json").version}, yjs ${require("yjs/package.json").version}`);
console.log(`B4: ${P} patches, final text ${END.length} UTF-16 units${converted ? " (positions converted from chars)" : " (chars = UTF-16 units)"}`);

// ---------------------------------------------------------------- 1. memory after one replay
// First thing in the process, so that each library's wasm memory (which
// never shrinks) shows its own replay; the process heap is measured as the
// difference across the replay with the document still alive.

const memRows = [];
const snaps = {};
function usage() {
  gc();
  gc();
  const m = process.memoryUsage();
  return { heap: m.heapUsed, external: m.external, arrayBuffers: m.arrayBuffers, rss: m.rss };
}
for (const name of ["weft", "loro", "yjs"]) {
  const lib = libs[name];
  const wasmBefore = lib.wasmMemory?.();
  const before = usage();
  const s = lib.make();
  lib.replay(s);
  check(name, lib.str(s));
  const after = usage();
  memRows.push({
    name,
    heap: after.heap - before.heap,
    external: after.external - before.external,
    arrayBuffers: after.arrayBuffers - before.arrayBuffers,
    wasmBefore,
    wasmAfter: lib.wasmMemory?.(),
  });
  const [t, bytes] = time(() => lib.snapshot(s));
  snaps[name] = { bytes, exportMs: t };
  lib.free(s);
}

// ---------------------------------------------------------------- 2. replay times, alternating

const order = ["weft", "loro", "yjs"];
const times = { weft: [], loro: [], yjs: [], array: [] };
const timesEach = { weft: [], loro: [] };
for (let r = 0; r < RUNS; r++) {
  const rot = order.map((_, i) => order[(i + r) % order.length]);
  for (const name of rot) {
    const lib = libs[name];
    gc();
    const s = lib.make();
    const [t] = time(() => lib.replay(s));
    check(name, lib.str(s));
    lib.free(s);
    times[name].push(t);
  }
}
if (BASELINE) {
  const s = libs.array.make();
  gc();
  const [t] = time(() => libs.array.replay(s));
  check("array", libs.array.str(s));
  times.array.push(t);
}
if (YJS_ONE_TXN) {
  const s = libs.yjs.make();
  gc();
  const [t] = time(() => libs.yjs.replayOneTxn(s));
  check("yjs", libs.yjs.str(s));
  libs.yjs.free(s);
  times.yjsOneTxn = [t];
}
// weft and loro with a commit after every patch (yjs: as above).
for (let r = 0; r < RUNS; r++) {
  const o = ["weft", "loro"];
  const rot = o.map((_, i) => o[(i + r) % o.length]);
  for (const name of rot) {
    const lib = libs[name];
    gc();
    const s = lib.make();
    const [t] = time(() => lib.replayCommitEach(s));
    check(name, lib.str(s));
    lib.free(s);
    timesEach[name].push(t);
  }
}

// ---------------------------------------------------------------- 3. snapshot import + first keystroke

const mid = END.length >> 1;
const want = END.slice(0, mid) + "x" + END.slice(mid);
const imp = {};
for (const name of ["weft", "loro", "yjs"]) imp[name] = { load: [], key: [], keyStr: [] };
for (let r = 0; r < RUNS * 2; r++) {
  const o = ["weft", "loro", "yjs"];
  for (const name of o.map((_, i) => o[(i + r) % o.length])) {
    const lib = libs[name];
    const bytes = snaps[name].bytes;
    gc();
    // import alone
    let [t, s] = time(() => lib.load(bytes));
    imp[name].load.push(t);
    lib.free(s);
    // import + one char in the middle + read the length
    gc();
    [t, s] = time(() => {
      const s = lib.load(bytes);
      lib.insert(s, mid, "x");
      if (lib.length(s) !== END.length + 1) throw new Error(`${name}: wrong length after keystroke`);
      return s;
    });
    imp[name].key.push(t);
    lib.free(s);
    // import + one char in the middle + read the whole string
    gc();
    [t, s] = time(() => {
      const s = lib.load(bytes);
      lib.insert(s, mid, "x");
      return [s, lib.str(s)];
    });
    imp[name].keyStr.push(t);
    if (s[1] !== want) throw new Error(`${name}: wrong text after import + keystroke`);
    lib.free(s[0]);
  }
}

// ---------------------------------------------------------------- 4. wasm sizes

const gz = (path) => {
  const raw = readFileSync(path);
  return { raw: raw.length, gz: gzipSync(raw, { level: 9 }).length };
};
const weftSize = gz(weftWasmUrl);
const loroSize = gz(loroGluePath.replace(/loro_wasm\.js$/, "loro_wasm_bg.wasm"));

// ---------------------------------------------------------------- report

console.log(`\nB4 replay through the JS API (${RUNS} runs, alternating order; median (min-max)):`);
console.log(`  weft, loro: one commit at the end; yjs: a transaction per call`);
for (const n of order) console.log(`    ${n.padEnd(7)} ${fmt(times[n])}`);
if (YJS_ONE_TXN) console.log(`    yjs in one transact(): ${fmt(times.yjsOneTxn)} (1 run)`);
if (BASELINE) console.log(`    array   ${fmt(times.array)} (plain JS array splice, no CRDT, 1 run)`);
const mw = median(times.weft), ml = median(times.loro), my = median(times.yjs);
console.log(`    weft/loro ${(mw / ml).toFixed(2)} (bar <= 0.5: ${mw <= 0.5 * ml ? "holds" : "fails"}), weft/yjs ${(mw / my).toFixed(2)} (bar <= 1: ${mw <= my ? "holds" : "fails"})`);
console.log(`  a commit after every patch (yjs as above)`);
for (const n of ["weft", "loro"]) console.log(`    ${n.padEnd(7)} ${fmt(timesEach[n])}`);
const ew = median(timesEach.weft), el = median(timesEach.loro);
console.log(`    weft/loro ${(ew / el).toFixed(2)}, weft/yjs ${(ew / my).toFixed(2)}`);

console.log(`\nSnapshot of the final B4 document (${RUNS * 2} runs, alternating):`);
for (const n of ["weft", "loro", "yjs"]) {
  console.log(`  ${n.padEnd(5)} ${snaps[n].bytes.length} bytes (export ${ms(snaps[n].exportMs)} ms, once)`);
  console.log(`        import ${fmt(imp[n].load)}; + keystroke + length ${fmt(imp[n].key)}; + keystroke + toString ${fmt(imp[n].keyStr)}`);
}

console.log(`\nMemory after one replay (document alive; deltas across the replay after gc; first thing in the process):`);
for (const m of memRows) {
  const wasm = m.wasmAfter != null ? `, wasm memory ${mb(m.wasmBefore)} -> ${mb(m.wasmAfter)}` : "";
  console.log(`  ${m.name.padEnd(5)} heap + external ${kb(m.heap + m.external)} (heap ${kb(m.heap)}, external ${kb(m.external)}, arrayBuffers ${kb(m.arrayBuffers)})${wasm}`);
}
console.log(`  (a wasm memory's growth shows in external, not in arrayBuffers; it never shrinks, so its size is the replay's peak)`);

console.log(`\n.wasm size (gzip level 9):`);
console.log(`  weft-wasm  ${weftSize.raw} bytes, gzipped ${weftSize.gz} (${kb(weftSize.gz)})`);
console.log(`  loro-crdt  ${loroSize.raw} bytes, gzipped ${loroSize.gz} (${kb(loroSize.gz)})  [nodejs/loro_wasm_bg.wasm]`);
console.log(`  weft/loro gzipped ${(weftSize.gz / loroSize.gz).toFixed(2)}`);
