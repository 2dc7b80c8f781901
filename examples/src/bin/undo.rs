//! Times exact undo (`UndoManager`) against baselines measured in the
//! same run.
//!
//! ```text
//! cargo run --release -p examples --bin undo -- [TRACE] [--runs R] [--only PART]
//! ```
//!
//! `--only undo|rounds|typing|paste` runs one part (for a profiler).
//!
//! Each figure is the median of `--runs` runs (default 11), in ms:
//!
//! - `undo after N remote ops`: a peer makes 16 steps, each typing a word
//!   (or deleting one), then N remote ops arrive (another peer typing at
//!   random places), then the steps are undone one by one, each timed;
//!   N = 1,000 and 100,000. The cost should follow the step, not the
//!   history: the ratio of the two medians is reported (bar: at most
//!   1.5x). The first undo of each run is shown apart, with the page
//!   faults it took (the first writes to memory the import reserved).
//! - `4,000 rounds with S steps`: rounds of (a local keystroke and commit,
//!   an import of one remote keystroke) with an undo manager holding S =
//!   2,000 steps, against the same rounds with a manager holding none
//!   (bar: within 10%).
//! - `B4 with an undo manager`: the trace (default automerge-paper, "B4")
//!   typed into a document with a manager attached, against plain typing
//!   in the same run (bar: at most 1.1x); once as one step, once with a
//!   commit (a step) per patch, against plain typing with the same
//!   commits.
//! - `paste 1.2M chars, checkout to the empty version and back`: both
//!   under 10 ms.
//!
//! Exits non-zero if an undone or replayed text is not what it should be.

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use examples::{count_arg, Flat, Stats};
use traces::Trace;
use weft::{Doc, ExportMode, Frontiers, UndoManager};

const USAGE: &str = "\
usage: undo [TRACE.json.gz] [--runs R] [--only undo|rounds|typing|paste]

Times one undo after 1,000 and 100,000 remote ops, imports with 2,000 undo steps against none,
typing a trace with an undo manager against without, and checkout around a 1.2M-char paste.";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("undo: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse_args() -> Result<(String, usize, Option<String>), Box<dyn Error>> {
    let mut path = "traces/sequential/automerge-paper.json.gz".to_owned();
    let mut runs = 11;
    let mut only = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = count_arg("--runs", args.next())?,
            "--only" => only = Some(args.next().ok_or("--only needs a part")?),
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}\n{USAGE}").into()),
            _ => path = a,
        }
    }
    Ok((path, runs, only))
}

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n.max(1) as u64) as usize
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn run() -> Result<(), Box<dyn Error>> {
    let (path, runs, only) = parse_args()?;
    let part = |name: &str| only.as_deref().is_none_or(|o| o == name);
    if part("undo") {
        undo_after_remote_ops(runs)?;
    }
    if part("rounds") {
        imports_with_steps(runs.min(5))?;
    }
    if part("typing") {
        typing_with_a_manager(&path, runs.min(7))?;
    }
    if part("paste") {
        paste_and_checkout(runs.min(5))?;
    }
    Ok(())
}

/// Steps each run of [`undos_after`] makes before the remote ops.
const STEPS: usize = 16;

/// The process's minor page faults so far (Linux; `None` elsewhere).
fn minor_faults() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Field 10, counted after the command name's closing parenthesis.
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .nth(7)?
        .parse()
        .ok()
}

/// What one run of [`undos_after`] measured.
struct Undos {
    /// The first undo after the remote ops, ms.
    first: f64,
    /// The median of the [`STEPS`] undos, ms.
    median: f64,
    /// Minor page faults during the first undo.
    first_faults: u64,
}

/// [`STEPS`] steps of one peer, each typing a word (or deleting one) at
/// its own place, then `n` remote ops, then the steps undone one by one,
/// each timed: every one of them is an undo of one step after `n` remote
/// ops.
fn undos_after(n: usize, delete: bool, seed: u64) -> Result<Undos, Box<dyn Error>> {
    let mut a = Doc::new();
    a.set_peer_id(1)?;
    a.text("t")
        .insert(0, &"lorem ipsum dolor sit amet ".repeat(40))?;
    a.commit();
    let mut b = a.fork();
    b.set_peer_id(2)?;
    let mut undo = UndoManager::new(&mut a);
    let before = a.text("t").to_string();
    for k in 0..STEPS {
        if delete {
            a.text("t").delete(6 + 50 * k, 6)?;
        } else {
            a.text("t").insert(6 + 50 * k, "brave ")?;
        }
        a.commit();
    }
    // `n` remote ops: another peer typing in bursts at random places.
    let mut rng = Rng(seed | 1);
    let mut made = 0;
    while made < n {
        let len = b.text("t").len();
        let pos = rng.below(len + 1);
        let k = (n - made).min(1 + rng.below(16));
        b.text("t").insert(pos, &"x".repeat(k))?;
        made += k;
    }
    b.commit();
    a.import(&b.export(ExportMode::Updates { from: &a.version() })?)?;
    let mut times = Vec::with_capacity(STEPS);
    let mut first_faults = 0;
    for k in 0..STEPS {
        let faults = minor_faults();
        let t = Instant::now();
        undo.undo(&mut a)?.ok_or("nothing to undo")?;
        times.push(ms(t));
        if k == 0 {
            first_faults = minor_faults().zip(faults).map_or(0, |(x, y)| x - y);
        }
    }
    // The undos leave exactly the other peer's text around A's.
    let mut check = b.clone();
    check.import(&a.export(ExportMode::Updates {
        from: &check.version(),
    })?)?;
    // B never saw A's steps: with A's undos, the texts are B's.
    if check.text("t").to_string() != b.text("t").to_string() || before.is_empty() {
        return Err("an undo left the wrong text".into());
    }
    let first = times[0];
    Ok(Undos {
        first,
        median: Stats::new(times).median,
        first_faults,
    })
}

/// `s` in microseconds (these figures are a few of them).
fn us(s: &Stats) -> String {
    format!(
        "{:8.2} us (min {:.2} us, max {:.2} us)",
        s.median * 1e3,
        s.min * 1e3,
        s.max * 1e3
    )
}

fn undo_after_remote_ops(runs: usize) -> Result<(), Box<dyn Error>> {
    println!("one undo after N remote ops ({STEPS} steps undone one by one per run, {runs} runs):");
    for delete in [false, true] {
        let what = if delete {
            "a deleted word"
        } else {
            "a typed word"
        };
        let mut medians = Vec::new();
        for n in [1_000, 100_000] {
            let all: Vec<Undos> = (0..runs)
                .map(|i| undos_after(n, delete, 7 + i as u64))
                .collect::<Result<_, _>>()?;
            let faults: u64 = all.iter().map(|u| u.first_faults).sum();
            let first = Stats::new(all.iter().map(|u| u.first).collect());
            let each = Stats::new(all.iter().map(|u| u.median).collect());
            println!("  undo of {what:15} after {n:7} remote ops  {}", us(&each));
            println!(
                "    the first undo of each run                  {} ({:.1} page faults)",
                us(&first),
                faults as f64 / runs as f64
            );
            medians.push(each.median);
        }
        println!(
            "  ratio 100,000 / 1,000: {:.2}x (bar: at most 1.5x)",
            medians[1] / medians[0]
        );
    }
    Ok(())
}

/// 4,000 rounds of (local keystroke + commit, import of a remote
/// keystroke) on a document whose manager holds `steps` steps.
fn rounds(steps: usize) -> Result<f64, Box<dyn Error>> {
    let mut a = Doc::new();
    a.set_peer_id(1)?;
    let mut b = a.fork();
    b.set_peer_id(2)?;
    // The history before: 2,000 keystrokes, as steps or not.
    let mut early = None;
    if steps > 0 {
        let mut u = UndoManager::new(&mut a);
        u.set_max_steps(steps);
        early = Some(u);
    }
    for i in 0..2_000 {
        let len = a.text("t").len();
        a.text("t")
            .insert(len, if i % 2 == 0 { "a" } else { "b" })?;
        a.commit();
    }
    let mut late = None;
    if steps == 0 {
        late = Some(UndoManager::new(&mut a));
    }
    let held = early
        .as_ref()
        .or(late.as_ref())
        .map_or(0, |u| u.undo_count());
    if held != steps {
        return Err(format!("the manager holds {held} steps, not {steps}").into());
    }
    // The remote keystrokes, made ahead.
    let mut updates = Vec::with_capacity(4_000);
    for _ in 0..4_000 {
        let from = b.version();
        b.text("t").insert(0, "r")?;
        b.commit();
        updates.push(b.export(ExportMode::Updates { from: &from })?);
    }
    let t = Instant::now();
    for u in &updates {
        let len = a.text("t").len();
        a.text("t").insert(len, "l")?;
        a.commit();
        a.import(u)?;
    }
    Ok(ms(t))
}

fn imports_with_steps(runs: usize) -> Result<(), Box<dyn Error>> {
    println!("4,000 rounds of (local keystroke, remote keystroke imported), median of {runs}:");
    let mut with = Vec::new();
    let mut without = Vec::new();
    for _ in 0..runs {
        without.push(rounds(0)?);
        with.push(rounds(2_000)?);
    }
    let (w, n) = (Stats::new(with), Stats::new(without));
    println!("  manager holding 2,000 steps  {w}");
    println!("  manager holding none         {n}");
    println!("  ratio: {:.3}x (bar: within 10%)", w.median / n.median);
    Ok(())
}

/// Types `flat` into a fresh document (with a manager if `manager`),
/// committing after every patch if `commits`. Returns the time in ms.
fn type_trace(flat: &Flat, manager: bool, commits: bool) -> Result<f64, Box<dyn Error>> {
    let mut d = Doc::new();
    d.set_peer_id(1)?;
    let u = manager.then(|| UndoManager::new(&mut d));
    let t = Instant::now();
    for p in &flat.patches {
        let mut text = d.text("t");
        if p.del > 0 {
            text.delete(p.pos as usize, p.del as usize)?;
        }
        let s = flat.ins(p);
        if !s.is_empty() {
            text.insert(p.pos as usize, s)?;
        }
        if commits {
            d.commit();
        }
    }
    d.commit();
    let took = ms(t);
    if d.text("t").to_string() != flat.end_content {
        return Err("the typed trace does not give its end text".into());
    }
    drop(u);
    Ok(took)
}

fn typing_with_a_manager(path: &str, runs: usize) -> Result<(), Box<dyn Error>> {
    let flat = Flat::new(&Trace::load(path)?);
    println!("typing {path} (median of {runs}, interleaved):");
    for commits in [false, true] {
        let (mut plain, mut with) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            plain.push(type_trace(&flat, false, commits)?);
            with.push(type_trace(&flat, true, commits)?);
        }
        let (p, w) = (Stats::new(plain), Stats::new(with));
        let how = if commits {
            "a commit per patch"
        } else {
            "one commit"
        };
        println!("  {how:20} plain        {p}");
        println!("  {how:20} with manager {w}");
        println!(
            "  {how:20} ratio {:.3}x (bar: at most 1.1x)",
            w.median / p.median
        );
    }
    Ok(())
}

fn paste_and_checkout(runs: usize) -> Result<(), Box<dyn Error>> {
    let paste = "All work and no play makes Jack a dull boy. ".repeat(1_200_000 / 44 + 1);
    let paste: String = paste.chars().take(1_200_000).collect();
    let (mut out, mut back) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        let mut d = Doc::new();
        d.set_peer_id(1)?;
        let empty: Frontiers = d.frontiers();
        d.text("t").insert(0, &paste)?;
        d.commit();
        let t = Instant::now();
        d.checkout(&empty)?;
        out.push(ms(t));
        if !d.text("t").is_empty() {
            return Err("the empty version shows text".into());
        }
        let t = Instant::now();
        d.checkout_to_latest()?;
        back.push(ms(t));
        if d.text("t").len() != 1_200_000 {
            return Err("back from the empty version, the paste is not there".into());
        }
    }
    println!("a 1.2M-char paste (median of {runs}):");
    println!("  checkout to the empty version  {}", Stats::new(out));
    println!("  checkout back to the latest    {}", Stats::new(back));
    println!("  (bar: both under 10 ms)");
    Ok(())
}
