//! Replays a sequential editing trace into Weft and into a plain rope, and
//! prints per-phase timings, sizes and memory.
//!
//! ```text
//! cargo run --release -p examples --bin replay -- [TRACE] [--times N] [--runs R] [--rich] [--events]
//! ```
//!
//! `TRACE` defaults to the automerge-paper ("B4") trace. `--times N` applies
//! the trace N times into one document, each copy appended at the end
//! ("B4xN"). Timings are medians of `--runs` runs (default 5); the rope
//! baseline runs in the same process so the ratio survives a noisy machine.
//! Exits non-zero when a final text differs from the trace's `endContent`.
//!
//! `--rich` also replays a *rich* version of the trace: every 1,000 patches
//! one bold mark goes over a random 10% of the text (seeded, so every run
//! makes the same marks). It reports that apply against the plain apply
//! of the same run, `to_delta()` of the final document, how much the
//! marks add to the update, and the first read of the marked text after
//! opening its snapshot against the same read of the unmarked one.
//!
//! `--events` also replays the trace with a commit after every patch and a
//! change-event subscriber ([`Doc::subscribe`]) that applies each event's
//! Quill delta to a jumprope mirror, as an editor's view would; the mirror
//! must end equal to the trace's text. It reports that apply (`apply (weft,
//! events)`) against the plain apply of the same run, the commits
//! alone (the same commits without a subscriber), and the floor of that
//! measurement: plain weft plus the rope apply, since the mirror makes
//! every edit again in its own rope.
//!
//! Each measured line starts with its label and the median in ms (`apply
//! (weft)  7.306 ms ...`), which scripts read; the explanations around them
//! are for people. Progress and estimates go to stderr.

use std::error::Error;
use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use examples::{
    allocations, count_arg, heap_live, heap_peak, proc_status_kib, reset_heap_peak, reset_peak_rss,
    Flat, Stats,
};
use traces::{LoadError, Trace};
use weft::{Delta, Doc, ExportMode, VersionVector};

const USAGE: &str = "\
usage: replay [TRACE.json.gz] [--times N] [--runs R] [--rich] [--events]

Replays a sequential editing trace into a Weft document and into jumprope (a
plain text rope with no history), and prints how long each step takes, how big
the exports are and how much memory the document needs.

  TRACE      a sequential trace (default: traces/sequential/automerge-paper.json.gz)
  --times N  apply the trace N times into one document, each copy after the last (default 1)
  --runs R   time every step R times and report the median (default 5)
  --rich     also replay it with marks: bold over a random tenth of the text every 1,000 edits
  --events   also replay it committing after every patch, with a change-event subscriber that
             applies every event to a jumprope mirror of the text (the cost of live events)";

struct Args {
    path: String,
    times: usize,
    runs: usize,
    rich: bool,
    events: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        path: traces::dir()
            .join("sequential/automerge-paper.json.gz")
            .display()
            .to_string(),
        times: 1,
        runs: 5,
        rich: false,
        events: false,
    };
    let mut path_given = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--times" => args.times = count_arg("--times", it.next())?,
            "--runs" => args.runs = count_arg("--runs", it.next())?,
            "--rich" => args.rich = true,
            "--events" => args.events = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => {
                return Err(format!("unknown option {a} (--help lists the options)"))
            }
            _ if path_given => {
                return Err(format!("one trace at a time: got {} and {a}", args.path))
            }
            _ => {
                args.path = a;
                path_given = true;
            }
        }
    }
    Ok(args)
}

/// Reports what the run is doing on stderr while it measures (only when
/// the run is long enough to need it): one line per step, or one line
/// updated in place on a terminal.
struct Progress {
    on: bool,
    tty: bool,
    started: Instant,
}

impl Progress {
    fn new(on: bool) -> Progress {
        Progress {
            on,
            tty: std::io::stderr().is_terminal(),
            started: Instant::now(),
        }
    }

    /// Run `run` (from 1) of `runs` of step `what` starts.
    fn step(&self, what: &str, run: usize, runs: usize) {
        if !self.on {
            return;
        }
        let at = self.started.elapsed().as_secs_f64();
        if self.tty {
            eprint!("\r\x1b[K[{at:6.1} s] {what}: run {run} of {runs}");
            let _ = std::io::stderr().flush();
        } else if run == 1 {
            eprintln!("[{at:6.1} s] {what} ({runs} runs)");
        }
    }

    /// Clears the progress line before results are printed.
    fn clear(&self) {
        if self.on && self.tty {
            eprint!("\r\x1b[K");
        }
    }

    /// Times `runs` calls of `f` (see [`examples::time_runs`]), reporting
    /// each run as step `what`; returns the statistics and the last result.
    fn time<T>(&self, what: &str, runs: usize, mut f: impl FnMut() -> T) -> (Stats, T) {
        let mut times = Vec::with_capacity(runs);
        let mut last = None;
        for run in 1..=runs.max(1) {
            self.step(what, run, runs);
            let t = Instant::now();
            let out = f();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            last = Some(out);
        }
        self.clear();
        match last {
            Some(out) => (Stats::new(times), out),
            None => unreachable!("runs.max(1) is at least one run"),
        }
    }
}

/// KiB (as `/proc/self/status` counts) in MB (1 MB = 1024 KiB).
fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Applies the trace `times` times into a fresh document, one `insert` /
/// `delete` call per patch.
fn apply_weft(flat: &Flat, times: usize) -> Result<Doc, weft::Error> {
    let mut doc = Doc::new();
    doc.set_peer_id(1)?;
    let mut text = doc.text("text");
    for _ in 0..times {
        let offset = text.len();
        for p in &flat.patches {
            let pos = offset + p.pos as usize;
            if p.del > 0 {
                text.delete(pos, p.del as usize)?;
            }
            if p.ins.1 > p.ins.0 {
                text.insert(pos, flat.ins(p))?;
            }
        }
    }
    Ok(doc)
}

/// Patches between two marks in the rich replay.
const MARK_EVERY: usize = 1000;

/// As [`apply_weft`], plus one bold mark over a random tenth of the text
/// every [`MARK_EVERY`] patches (with `distinct`, a comment with its own
/// key instead, so no mark is redundant). Returns the document and the
/// marks made.
#[inline(never)]
fn apply_rich(flat: &Flat, times: usize, distinct: bool) -> Result<(Doc, usize), weft::Error> {
    let mut doc = Doc::new();
    doc.set_peer_id(1)?;
    let mut text = doc.text("text");
    let mut rng = 0x2545_f491_4f6c_dd1d_u64;
    let mut marks = 0;
    for _ in 0..times {
        let offset = text.len();
        for (i, p) in flat.patches.iter().enumerate() {
            let pos = offset + p.pos as usize;
            if p.del > 0 {
                text.delete(pos, p.del as usize)?;
            }
            if p.ins.1 > p.ins.0 {
                text.insert(pos, flat.ins(p))?;
            }
            if i % MARK_EVERY == MARK_EVERY - 1 {
                let len = text.len();
                let span = len / 10;
                if span > 0 {
                    // xorshift64
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let start = (rng % (len - span + 1) as u64) as usize;
                    if distinct {
                        text.mark(start..start + span, &format!("comment:{marks}"), true)?;
                    } else {
                        text.mark(start..start + span, "bold", true)?;
                    }
                    marks += 1;
                }
            }
        }
    }
    Ok((doc, marks))
}

/// A subscriber's mirror of the text: a rope the events are applied to,
/// and the first event that did not fit it.
struct Mirror {
    rope: jumprope::JumpRope,
    error: Option<String>,
}

/// A [`Mirror`] shared with the subscriber's callback.
type SharedMirror = Arc<Mutex<Mirror>>;

/// Applies a Quill change delta counted in chars to `rope`.
fn apply_to_rope(rope: &mut jumprope::JumpRope, delta: &[Delta]) -> Result<(), String> {
    let mut pos = 0;
    for d in delta {
        match d {
            Delta::Retain { retain, .. } => pos += retain,
            Delta::Insert { insert, .. } => {
                if pos > rope.len_chars() {
                    return Err(format!(
                        "insert at {pos} past the end ({})",
                        rope.len_chars()
                    ));
                }
                rope.insert(pos, insert);
                pos += insert.chars().count();
            }
            Delta::Delete { delete } => {
                if pos + delete > rope.len_chars() {
                    return Err(format!(
                        "delete {pos}..{} past the end ({})",
                        pos + delete,
                        rope.len_chars()
                    ));
                }
                rope.remove(pos..pos + delete);
            }
            // An embed is U+FFFC in the text.
            _ => {
                rope.insert(pos, "\u{FFFC}");
                pos += 1;
            }
        }
    }
    Ok(())
}

/// As [`apply_weft`], with a commit after every patch and, with
/// `subscribe`, a subscriber applying each event to a rope mirror (the
/// mirror is returned).
#[inline(never)]
fn apply_events(
    flat: &Flat,
    times: usize,
    subscribe: bool,
) -> Result<(Doc, Option<SharedMirror>), weft::Error> {
    let mut doc = Doc::new();
    doc.set_peer_id(1)?;
    let mirror = subscribe.then(|| {
        Arc::new(Mutex::new(Mirror {
            rope: jumprope::JumpRope::new(),
            error: None,
        }))
    });
    let sub = mirror.as_ref().map(|mirror| {
        let m = Arc::clone(mirror);
        doc.subscribe(move |event| {
            let mut m = m.lock().unwrap_or_else(|e| e.into_inner());
            for diff in &event.texts {
                if let Err(e) = apply_to_rope(&mut m.rope, &diff.delta) {
                    m.error.get_or_insert(e);
                }
            }
        })
    });
    for _ in 0..times {
        let offset = doc.text("text").len();
        for p in &flat.patches {
            let pos = offset + p.pos as usize;
            let mut text = doc.text("text");
            if p.del > 0 {
                text.delete(pos, p.del as usize)?;
            }
            if p.ins.1 > p.ins.0 {
                text.insert(pos, flat.ins(p))?;
            }
            doc.commit();
        }
    }
    drop(sub);
    Ok((doc, mirror))
}

fn apply_rope(flat: &Flat, times: usize) -> jumprope::JumpRope {
    let mut rope = jumprope::JumpRope::new();
    for _ in 0..times {
        let offset = rope.len_chars();
        for p in &flat.patches {
            let pos = offset + p.pos as usize;
            if p.del > 0 {
                rope.remove(pos..pos + p.del as usize);
            }
            if p.ins.1 > p.ins.0 {
                rope.insert(pos, flat.ins(p));
            }
        }
    }
    rope
}

/// The same edits on a `String` (only for ASCII traces, where char
/// positions are byte offsets, and few copies).
fn apply_string(flat: &Flat, times: usize) -> String {
    let mut s = String::new();
    for _ in 0..times {
        let offset = s.len();
        for p in &flat.patches {
            let pos = offset + p.pos as usize;
            s.replace_range(pos..pos + p.del as usize, flat.ins(p));
        }
    }
    s
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("replay: {e}");
            ExitCode::from(2)
        }
    }
}

/// Rough cost of a whole run, per run, in units of one weft apply: the
/// two applies, to_string, the export and imports of the update and the
/// snapshot steps (measured on B4 x100 with 5 runs: 21 s in all, the
/// first apply 0.9 s).
const COST_PER_APPLY: f64 = 5.5;
/// What `--rich` adds to that (two rich applies, their exports).
const RICH_COST_PER_APPLY: f64 = 3.0;
/// What `--events` adds to that (an apply with events, one with commits).
const EVENTS_COST_PER_APPLY: f64 = 3.0;
/// Peak memory of a whole run, in units of one document's net peak: the
/// document and the copies the import, load and edit steps hold side by
/// side, the exported bytes and the expected text (B4 x10 and x100: 4.8
/// times the document's net peak, 89 MB and 693 MB in all).
const MEMORY_PER_DOC: f64 = 5.0;

fn run() -> Result<bool, Box<dyn Error>> {
    let args = parse_args()?;
    let t = Instant::now();
    let trace = Trace::load(&args.path).map_err(|e| match e {
        LoadError::Io(e) => format!("cannot read trace {}: {e}", args.path),
        LoadError::Json(e) => format!("{} is not an editing trace (JSON): {e}", args.path),
    })?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    if trace.is_concurrent() {
        return Err(format!(
            "{} is a concurrent trace (several users at once): replay it with \
             `cargo run --release -p examples --bin concurrent -- {}`",
            args.path, args.path
        )
        .into());
    }
    let flat = Flat::new(&trace);
    let patches = trace.patch_count();
    let char_ops = trace.char_op_count();
    drop(trace);

    // Memory and allocations: one replay after resetting the peak. It
    // also tells what the rest of a long run will cost.
    if args.times > 1 {
        eprintln!(
            "replay: {} copies of the trace: replaying them once to estimate the whole run...",
            args.times
        );
    }
    let peak_reset = reset_peak_rss();
    let rss_before = proc_status_kib("VmRSS:").unwrap_or(0);
    let allocs_before = allocations();
    let heap_before = reset_heap_peak();
    let t = Instant::now();
    let doc = apply_weft(&flat, args.times)?;
    let first_apply = t.elapsed().as_secs_f64();
    let allocs = allocations() - allocs_before;
    let heap_peak = heap_peak() - heap_before;
    let heap_kept = heap_live() - heap_before;
    let peak = proc_status_kib("VmHWM:").unwrap_or(0);
    let rss_after = proc_status_kib("VmRSS:").unwrap_or(0);
    let (ops, runs, changes, items) = doc.debug_sizes();
    drop(doc);
    let per_apply = COST_PER_APPLY
        + if args.rich { RICH_COST_PER_APPLY } else { 0.0 }
        + if args.events {
            EVENTS_COST_PER_APPLY
        } else {
            0.0
        };
    let estimate_s = first_apply * args.runs as f64 * per_apply;
    let estimate_mb = mb(rss_before) + MEMORY_PER_DOC * mb(peak.saturating_sub(rss_before));
    let long = estimate_s > 3.0;
    if args.times > 1 || long {
        eprintln!(
            "replay: {} copies x {} runs: expect roughly {} and {:.0} MB of memory \
             (one replay of all copies took {}){}",
            args.times,
            args.runs,
            duration(estimate_s),
            estimate_mb,
            duration(first_apply),
            if long { "; progress below" } else { "" }
        );
    }
    let progress = Progress::new(long);

    let expected = flat.end_content.repeat(args.times);
    let mut ok = true;
    let mut check = |what: &str, got: &str| {
        if got != expected {
            ok = false;
            let at = got
                .chars()
                .zip(expected.chars())
                .take_while(|(a, b)| a == b)
                .count();
            eprintln!(
                "MISMATCH after {what}: {} chars, expected {}, first difference at char {at}",
                got.chars().count(),
                expected.chars().count()
            );
        }
    };

    let name = args.path.rsplit('/').next().unwrap_or(&args.path);
    println!(
        "trace {name} x{}: {} patches, {} char ops, final {} chars; {} runs per timing",
        args.times,
        patches * args.times,
        char_ops * args.times,
        flat.end_chars() * args.times,
        args.runs
    );
    println!(
        "  A patch is one edit of the trace (delete chars at a position, then insert text there);\n  \
         a char op is one char inserted or deleted. Times are in milliseconds (ms): the median of\n  \
         the runs, then the fastest (min) and slowest (max) run. \"0.95x rope\" is weft's time\n  \
         divided by jumprope's: jumprope is a plain text rope (no history, no merging) doing the\n  \
         same edits in this process, so below 1.00x Weft is faster. Memory is in MB (1024 KiB)."
    );
    if args.events {
        println!(
            "  --events: \"apply (weft, events)\" commits after every patch, with a subscriber that\n  \
             applies each change event (a Quill delta) to a jumprope mirror of the text; \"x plain\n  \
             weft\" divides its time by \"apply (weft)\" of this run (no commits, no subscriber)."
        );
    }
    println!("load trace            {load_ms:9.3} ms  (read and decompress the trace file)");

    println!("\nediting: every patch applied to an empty document, one insert or delete call each");

    let (weft_apply, mut doc) =
        progress.time("apply (weft)", args.runs, || apply_weft(&flat, args.times));
    let doc = doc.as_mut().map_err(|e| e.clone())?;
    let (rope_apply, rope) = progress.time("apply (jumprope)", args.runs, || {
        apply_rope(&flat, args.times)
    });
    check("rope apply", &rope.to_string());
    drop(rope);
    let ratio = |x: f64| x / rope_apply.median;
    // With --events: the same edits committed one by one, with a
    // subscriber mirroring them, and the commits alone.
    let mut events_ok = true;
    let events = if args.events {
        let (with, out) = progress.time("apply (weft, events)", args.runs, || {
            apply_events(&flat, args.times, true)
        });
        let (mut events_doc, mirror) = out?;
        let text = events_doc.text("text").to_string();
        check("apply with events", &text);
        match mirror
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
        {
            Some(m) => match &m.error {
                Some(e) => {
                    events_ok = false;
                    eprintln!("MISMATCH: an event did not fit the mirror: {e}");
                }
                None => {
                    let mirrored = m.rope.to_string();
                    if mirrored != text {
                        events_ok = false;
                        eprintln!("MISMATCH: the events' mirror differs from the final text");
                    }
                    check("the events' mirror", &mirrored);
                }
            },
            None => unreachable!("apply_events(.., true) returns a mirror"),
        }
        drop((events_doc, mirror, text));
        let (commits, out) = progress.time("apply (weft, commits)", args.runs, || {
            apply_events(&flat, args.times, false)
        });
        check("apply with commits", &out?.0.text("text").to_string());
        Some((with, commits))
    } else {
        None
    };
    println!(
        "apply (weft)          {weft_apply}  {:.2}x rope",
        ratio(weft_apply.median)
    );
    if let Some((with, commits)) = events {
        println!(
            "apply (weft, events)  {with}  {:.2}x plain weft, {:.2}x rope",
            with.median / weft_apply.median,
            ratio(with.median)
        );
        println!(
            "  commits alone       {commits}  {:.2}x plain weft  (a commit after every patch, no subscriber;\n    \
             the subscriber and its mirror add {:.2}x on top of them)",
            commits.median / weft_apply.median,
            with.median / commits.median
        );
        println!(
            "  floor               {:9.3} ms  {:.2}x plain weft  (plain weft plus the rope apply below: the\n    \
             mirror makes the same edits in its own rope, so no events path gets under this)",
            weft_apply.median + rope_apply.median,
            (weft_apply.median + rope_apply.median) / weft_apply.median
        );
    }
    println!("apply (jumprope)      {rope_apply}  1.00x");
    // A String costs O(n) per edit: only worth it for small documents.
    if flat.text.is_ascii() && args.times <= 4 {
        let (s, _) = progress.time("apply (String)", args.runs, || {
            apply_string(&flat, args.times)
        });
        println!(
            "apply (String)        {s}  {:.2}x rope  (a Rust String: every edit moves the text after it)",
            ratio(s.median)
        );
    }
    println!(
        "  weft throughput     {:9.2} M patches/s  (millions of patches per second, from the median)",
        (patches * args.times) as f64 / weft_apply.median / 1e3
    );
    println!("  heap allocations    {allocs:9}  (calls to the allocator during one weft replay)");
    println!(
        "  net peak memory     {:9.3} MB  (the process's peak during one replay, {:.1} MB, minus the \
         {:.1} MB it held before{})",
        mb(peak.saturating_sub(rss_before)),
        mb(peak),
        mb(rss_before),
        if peak_reset {
            ""
        } else {
            "; the peak could NOT be reset, so it may be an earlier one"
        },
    );
    println!(
        "  net peak heap       {:9.3} MB  (bytes the replay held on the heap at its peak; {:.3} MB \
         at its end, the document)",
        mb(heap_peak / 1024),
        mb(heap_kept / 1024),
    );
    println!(
        "  memory with doc     {:9.3} MB  (the whole process right after the replay)",
        mb(rss_after)
    );
    println!(
        "  ops {ops}, op runs {runs}, changes {changes}, text items {items}\n    \
         (ops: one per char inserted or deleted; op runs: consecutive ops stored as one;\n    \
         changes: groups of ops sent together; text items: runs of chars in the text's tree,\n    \
         deleted ones included)"
    );

    let (to_string, text) = progress.time("to_string", args.runs, || doc.text("text").to_string());
    check("apply", &text);
    drop(text);
    println!("to_string             {to_string}  (read the whole text into a String)");

    println!(
        "\nsyncing: the whole history as an update, the bytes a peer that has nothing receives"
    );
    let (export, bytes) = progress.time("export updates", args.runs, || {
        doc.export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
    });
    let bytes = bytes?;
    println!("export updates        {export}  {} bytes", bytes.len());
    let (import, imported) = progress.time("import updates", args.runs, || {
        let mut d = Doc::new();
        d.import(&bytes).map(|_| d)
    });
    let mut imported = imported?;
    check("import", &imported.text("text").to_string());
    drop(imported);
    println!("import updates        {import}  (into an empty document)");
    let (import_read, read) = progress.time("import + to_string", args.runs, || {
        let mut d = Doc::new();
        d.import(&bytes).map(|_| d.text("text").to_string())
    });
    check("import + to_string", &read?);
    println!("import + to_string    {import_read}");

    // Snapshots: export, lazy import, import + read, full load, and a
    // memcpy of the same bytes (the floor for anything that takes them).
    println!(
        "\nsnapshots: the history plus the current text, to store a document; importing one\n  \
         reads only what is asked for (the text first; the history and tree when needed)"
    );
    let (snap_export, snap) = progress.time("export snapshot", args.runs, || {
        doc.export(ExportMode::Snapshot)
    });
    let snap = snap?;
    println!("export snapshot       {snap_export}  {} bytes", snap.len());
    let (snap_import, lazy) = progress.time("import snapshot", args.runs, || {
        let mut d = Doc::new();
        d.import(&snap).map(|_| d)
    });
    lazy?;
    let (memcpy, copy) = progress.time("copy the snapshot's bytes", args.runs, || snap.to_vec());
    println!(
        "import snapshot       {snap_import}  ({:.1}x a plain copy of its bytes (memcpy), which takes {:.3} ms)",
        snap_import.median / memcpy.median,
        memcpy.median
    );
    let (snap_read, read) = progress.time("snapshot + to_string", args.runs, || {
        let mut d = Doc::new();
        d.import(&snap).map(|_| d.text("text").to_string())
    });
    check("snapshot import + to_string", &read?);
    println!("  + to_string         {snap_read}");
    let (snap_load, loaded) = progress.time("snapshot + load", args.runs, || {
        let mut d = Doc::new();
        d.import(&snap)?;
        d.load().map(|_| d)
    });
    let mut loaded = loaded?;
    check("snapshot import + load", &loaded.text("text").to_string());
    println!("  + load everything   {snap_load}  (history and tree, as a merge or export does)");
    // One keystroke in the middle of the text.
    let mid = expected.chars().count() / 2;
    let (snap_edit, edited) = progress.time("snapshot + first edit", args.runs, || {
        let mut d = Doc::new();
        d.import(&snap)?;
        d.text("text").insert(mid, "x").map(|_| d)
    });
    let mut edited = edited?;
    let mut at_end = edited.text("text").to_string();
    drop(edited);
    // Take the keystroke out again: the rest must be the trace's text.
    match at_end.char_indices().nth(mid) {
        Some((at, 'x')) => {
            at_end.remove(at);
        }
        _ => at_end.clear(),
    }
    check("snapshot import + edit", &at_end);
    drop(at_end);
    println!("  + first edit        {snap_edit}  (a keystroke in the middle: the text's tree, no history)");
    let mut round_trip_ok = true;
    if loaded.export(ExportMode::Snapshot)? != snap || copy != snap {
        round_trip_ok = false;
        eprintln!("MISMATCH: export -> import -> export of the snapshot is not byte-identical");
    }
    drop((loaded, copy));

    // Shallow snapshot: the state plus no history, beside the full one.
    println!("\nshallow snapshot: the current state and no history (ShallowSnapshot at the latest version)");
    let latest = doc.frontiers();
    let (shallow_export, shallow) = progress.time("export shallow snapshot", args.runs, || {
        doc.export(ExportMode::ShallowSnapshot(&latest))
    });
    let shallow = shallow?;
    println!(
        "export shallow        {shallow_export}  {} bytes ({:.2}x the full snapshot)",
        shallow.len(),
        shallow.len() as f64 / snap.len() as f64
    );
    // Against the full snapshot in alternating runs: both read their
    // text the same way, so the ratio is what matters, and a busy
    // machine skews two separate series more than their pairs.
    let (mut full_times, mut shallow_times) = (Vec::new(), Vec::new());
    for _ in 0..args.runs.max(1) {
        for (what, bytes, times) in [
            ("snapshot import + to_string", &snap, &mut full_times),
            ("shallow import + to_string", &shallow, &mut shallow_times),
        ] {
            let t = std::time::Instant::now();
            let mut d = Doc::new();
            d.import(bytes)?;
            let text = d.text("text").to_string();
            times.push(t.elapsed().as_secs_f64() * 1e3);
            check(what, &text);
        }
    }
    let (full_read, shallow_read) = (Stats::new(full_times), Stats::new(shallow_times));
    println!(
        "import + to_string    {shallow_read}  ({:.2}x the full snapshot's {:.3} ms, alternating runs)",
        shallow_read.median / full_read.median,
        full_read.median
    );
    let (shallow_load, loaded) = progress.time("shallow + load", args.runs, || {
        let mut d = Doc::new();
        d.import(&shallow)?;
        d.load().map(|_| d)
    });
    let mut loaded = loaded?;
    check("shallow import + load", &loaded.text("text").to_string());
    println!(
        "  + load everything   {shallow_load}  ({:.2}x the full snapshot's)",
        shallow_load.median / snap_load.median
    );
    if loaded.export(ExportMode::Snapshot)? != shallow {
        round_trip_ok = false;
        eprintln!(
            "MISMATCH: export -> import -> export of the shallow snapshot is not byte-identical"
        );
    }
    drop(loaded);

    if args.rich {
        println!(
            "\nrich text: the same edits plus a mark over a random tenth of the text every {MARK_EVERY} patches"
        );
        let (rich_apply, rich) = progress.time("apply (weft, rich)", args.runs, || {
            apply_rich(&flat, args.times, false)
        });
        let (mut rich, marks) = rich?;
        check("rich apply", &rich.text("text").to_string());
        let (to_delta, delta) = progress.time("to_delta (rich)", args.runs, || {
            rich.text("text").to_delta()
        });
        let plain_bytes = bytes.len();
        let rich_bytes = rich
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })?
            .len();
        let mut round = Doc::new();
        round.import(&rich.export(ExportMode::Updates {
            from: &VersionVector::new(),
        })?)?;
        if round.text("text").to_delta() != delta {
            round_trip_ok = false;
            eprintln!("MISMATCH: the rich document's delta changed through export/import");
        }
        // Redundant marks (the range already bold) make no ops.
        let made = (rich.debug_sizes().0 - ops) / 2;
        println!(
            "apply (weft, rich)    {rich_apply}  {:.2}x plain weft, {:.2}x rope ({marks} bold marks, {made} not redundant: the others covered text already bold and made no ops)",
            rich_apply.median / weft_apply.median,
            ratio(rich_apply.median)
        );
        println!(
            "to_delta (rich)       {to_delta}  {} runs  (the text as Quill delta runs: stretches with the same styles)",
            delta.len()
        );
        println!(
            "export updates (rich) {} bytes: +{} bytes ({:+.2}%, {:.1} bytes per mark) for the marks",
            rich_bytes,
            rich_bytes as i64 - plain_bytes as i64,
            (rich_bytes as f64 / plain_bytes as f64 - 1.0) * 100.0,
            (rich_bytes as f64 - plain_bytes as f64) / made.max(1) as f64
        );
        let rich_snap = rich.export(ExportMode::Snapshot)?;
        let mut lazy = Doc::new();
        lazy.import(&rich_snap)?;
        if lazy.text("text").to_delta() != delta {
            round_trip_ok = false;
            eprintln!("MISMATCH: the rich document's delta changed through a snapshot");
        }
        println!(
            "export snapshot (rich) {} bytes: +{} bytes ({:.1} bytes per mark) for the marks",
            rich_snap.len(),
            rich_snap.len() as i64 - snap.len() as i64,
            (rich_snap.len() as f64 - snap.len() as f64) / made.max(1) as f64
        );
        // The first read of the marked text after opening its snapshot,
        // against the same read of the unmarked snapshot, in alternating
        // runs: `text("text").to_delta()`, what an editor shows first.
        let (mut plain_times, mut rich_times) = (Vec::new(), Vec::new());
        for _ in 0..args.runs.max(1) {
            for (bytes, times, want) in [
                (&snap, &mut plain_times, None),
                (&rich_snap, &mut rich_times, Some(&delta)),
            ] {
                let t = Instant::now();
                let mut d = Doc::new();
                d.import(bytes)?;
                let read = d.text("text").to_delta();
                times.push(t.elapsed().as_secs_f64() * 1e3);
                let fits = match want {
                    Some(want) => read == *want,
                    None => read == [Delta::insert(expected.as_str())],
                };
                if !fits {
                    round_trip_ok = false;
                    eprintln!("MISMATCH: the first read after opening a snapshot");
                }
            }
        }
        let (plain_read, rich_read) = (Stats::new(plain_times), Stats::new(rich_times));
        println!(
            "first read (rich)     {rich_read}  {:.2}x the unmarked snapshot's {:.3} ms (open the snapshot,\n    \
             then text(\"text\").to_delta(); alternating runs)",
            rich_read.median / plain_read.median,
            plain_read.median
        );
        drop((rich, round, lazy, rich_snap));

        // The same with every mark on its own key: none is redundant.
        let (apply, doc) = progress.time("apply (weft, comments)", args.runs, || {
            apply_rich(&flat, args.times, true)
        });
        let (mut doc, marks) = doc?;
        check("rich apply (comments)", &doc.text("text").to_string());
        let (to_delta, delta) = progress.time("to_delta (comments)", args.runs, || {
            doc.text("text").to_delta()
        });
        let made = (doc.debug_sizes().0 - ops) / 2;
        let size = doc
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })?
            .len();
        println!(
            "apply (weft, comments) {apply}  {:.2}x plain weft ({marks} comment marks, {made} made; \
             each comment:<i> key its own, so marks overlap)",
            apply.median / weft_apply.median
        );
        println!("to_delta (comments)   {to_delta}  {} runs", delta.len());
        println!(
            "export updates (comm.) {size} bytes: +{} bytes ({:.1} bytes per mark)",
            size - bytes.len(),
            (size - bytes.len()) as f64 / made.max(1) as f64
        );
    }
    let ok = ok && round_trip_ok && events_ok;
    if ok {
        println!("text ok: matches endContent after apply and after import");
    }
    if long {
        eprintln!(
            "replay: done in {} (estimated {})",
            duration(progress.started.elapsed().as_secs_f64()),
            duration(estimate_s)
        );
    }
    Ok(ok)
}

/// `s` seconds for people: "0.4 s", "25 s", "3 min".
fn duration(s: f64) -> String {
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 120.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min", s / 60.0)
    }
}
