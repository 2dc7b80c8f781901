// Shrinks a failure of fuzz.test.mjs to the fewest steps that still fail
// the same way: `node test/fuzz-min.mjs SEED STEPS [SYNC_EVERY]`. Prints the
// log of the smallest failing run. Not a test (no .test. in the name).
process.env.FUZZ_MIN = "1";
const { runSeed, freshWeft } = await import("./fuzz.test.mjs");

const seed = Number(process.argv[2]);
const steps = Number(process.argv[3] ?? 1500);
const syncEvery = Number(process.argv[4] ?? 40);

let shared = null;
async function run(keepSet) {
  // A trap may leave the module unusable: a fresh instance for each run then.
  if (!shared) shared = await freshWeft();
  const w = shared;
  try {
    runSeed(w, seed, steps, syncEvery, (i) => keepSet.has(i));
    return null;
  } catch (e) {
    const m = String(e.message);
    if (/TRAP/.test(m)) shared = null;
    const kind = m.replace(/^seed \d+, op \d+: /, "").split(/[:\n]/)[0].replace(/\d+/g, "#");
    return { kind, message: m };
  }
}

let keep = [...Array(steps).keys()];
const first = await run(new Set(keep));
if (!first) {
  console.log("no failure");
  process.exit(0);
}
// The failing step is the last step logged; nothing after it matters.
const lastStep = Number([...first.message.matchAll(/-- step (\d+)/g)].pop()?.[1] ?? steps - 1);
keep = keep.filter((i) => i <= lastStep);
console.log(`failure: ${first.kind} (last step ${lastStep})`);
let chunk = Math.ceil(keep.length / 2);
let best = first;
while (chunk >= 1) {
  let progress = false;
  for (let at = 0; at < keep.length; at += chunk) {
    const trial = keep.slice(0, at).concat(keep.slice(at + chunk));
    if (!trial.length) continue;
    const res = await run(new Set(trial));
    if (res && res.kind === first.kind) {
      keep = trial;
      best = res;
      progress = true;
      at -= chunk;
    }
  }
  if (!progress) chunk = Math.floor(chunk / 2);
}
console.log(`kept steps: ${keep.join(",")}`);
console.log(best.message);
