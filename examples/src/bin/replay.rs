//! Replays a sequential editing trace into Weft and into a plain rope, and
//! prints per-phase timings, sizes and memory.
//!
//! ```text
//! cargo run --release -p examples --bin replay -- [TRACE] [--times N] [--runs R] [--rich]
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
//! of the same run, `to_delta()` of the final document, and how much the
//! marks add to the update.

use std::error::Error;
use std::process::ExitCode;
use std::time::Instant;

use examples::{allocations, proc_status_kib, reset_peak_rss, time_runs, Flat};
use traces::Trace;
use weft::{Doc, ExportMode, VersionVector};

struct Args {
    path: String,
    times: usize,
    runs: usize,
    rich: bool,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let mut args = Args {
        path: traces::dir()
            .join("sequential/automerge-paper.json.gz")
            .display()
            .to_string(),
        times: 1,
        runs: 5,
        rich: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--times" => args.times = it.next().ok_or("--times needs a value")?.parse()?,
            "--runs" => args.runs = it.next().ok_or("--runs needs a value")?.parse()?,
            "--rich" => args.rich = true,
            "-h" | "--help" => {
                println!("usage: replay [TRACE.json.gz] [--times N] [--runs R] [--rich]");
                std::process::exit(0);
            }
            _ if a.starts_with("--") => return Err(format!("unknown option {a}").into()),
            _ => args.path = a,
        }
    }
    if args.times == 0 || args.runs == 0 {
        return Err("--times and --runs must be at least 1".into());
    }
    Ok(args)
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

fn run() -> Result<bool, Box<dyn Error>> {
    let args = parse_args()?;
    let t = Instant::now();
    let trace = Trace::load(&args.path)?;
    let load_ms = t.elapsed().as_secs_f64() * 1e3;
    if trace.is_concurrent() {
        return Err("this is a concurrent trace; use the `concurrent` binary".into());
    }
    let flat = Flat::new(&trace);
    let patches = trace.patch_count();
    let char_ops = trace.char_op_count();
    drop(trace);
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
    println!("load trace            {load_ms:9.3} ms");

    // Memory and allocations: one replay after resetting the peak.
    let peak_reset = reset_peak_rss();
    let rss_before = proc_status_kib("VmRSS:").unwrap_or(0);
    let allocs_before = allocations();
    let doc = apply_weft(&flat, args.times)?;
    let allocs = allocations() - allocs_before;
    let peak = proc_status_kib("VmHWM:").unwrap_or(0);
    let rss_after = proc_status_kib("VmRSS:").unwrap_or(0);
    let (ops, runs, changes, items) = doc.debug_sizes();
    drop(doc);

    let (weft_apply, mut doc) = time_runs(args.runs, || apply_weft(&flat, args.times));
    let doc = doc.as_mut().map_err(|e| e.clone())?;
    let (rope_apply, rope) = time_runs(args.runs, || apply_rope(&flat, args.times));
    check("rope apply", &rope.to_string());
    // A String costs O(n) per edit: only worth it for small documents.
    let string_apply = (flat.text.is_ascii() && args.times <= 4)
        .then(|| time_runs(args.runs, || apply_string(&flat, args.times)));

    let (to_string, text) = time_runs(args.runs, || doc.text("text").to_string());
    check("apply", &text);
    let (export, bytes) = time_runs(args.runs, || {
        doc.export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
    });
    let bytes = bytes?;
    let (import, imported) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&bytes).map(|_| d)
    });
    let mut imported = imported?;
    check("import", &imported.text("text").to_string());
    let (import_read, read) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&bytes).map(|_| d.text("text").to_string())
    });
    check("import + to_string", &read?);

    // Snapshots: export, lazy import, import + read, full load, and a
    // memcpy of the same bytes (the floor for anything that takes them).
    let (snap_export, snap) = time_runs(args.runs, || doc.export(ExportMode::Snapshot));
    let snap = snap?;
    let (snap_import, lazy) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&snap).map(|_| d)
    });
    lazy?;
    let (snap_read, read) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&snap).map(|_| d.text("text").to_string())
    });
    check("snapshot import + to_string", &read?);
    let (snap_load, loaded) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&snap)?;
        d.load().map(|_| d)
    });
    let mut loaded = loaded?;
    check("snapshot import + load", &loaded.text("text").to_string());
    // One keystroke in the middle of the text.
    let mid = expected.chars().count() / 2;
    let (snap_edit, edited) = time_runs(args.runs, || {
        let mut d = Doc::new();
        d.import(&snap)?;
        d.text("text").insert(mid, "x").map(|_| d)
    });
    let mut edited = edited?;
    let mut at_end = edited.text("text").to_string();
    // Take the keystroke out again: the rest must be the trace's text.
    match at_end.char_indices().nth(mid) {
        Some((at, 'x')) => {
            at_end.remove(at);
        }
        _ => at_end.clear(),
    }
    check("snapshot import + edit", &at_end);
    let (memcpy, copy) = time_runs(args.runs, || snap.to_vec());
    let mut round_trip_ok = true;
    if loaded.export(ExportMode::Snapshot)? != snap || copy != snap {
        round_trip_ok = false;
        eprintln!("MISMATCH: export -> import -> export of the snapshot is not byte-identical");
    }

    let ratio = |x: f64| x / rope_apply.median;
    println!(
        "apply (weft)          {weft_apply}  {:.2}x rope",
        ratio(weft_apply.median)
    );
    println!("apply (jumprope)      {rope_apply}  1.00x");
    if let Some((s, _)) = string_apply {
        println!("apply (String)        {s}  {:.2}x rope", ratio(s.median));
    }
    println!(
        "  weft throughput     {:9.2} M patches/s",
        (patches * args.times) as f64 / weft_apply.median / 1e3
    );
    println!("  heap allocations    {allocs:9}");
    println!(
        "  net peak memory     {:9.3} MB (peak {} KiB - RSS after load {} KiB{}); RSS with doc {} KiB",
        peak.saturating_sub(rss_before) as f64 / 1024.0,
        peak,
        rss_before,
        if peak_reset { "" } else { ", peak NOT reset" },
        rss_after
    );
    println!("  ops {ops}, op runs {runs}, changes {changes}, text items {items}");
    println!("to_string             {to_string}");
    println!("export updates        {export}  {} bytes", bytes.len());
    println!("import updates        {import}");
    println!("import + to_string    {import_read}");
    println!("export snapshot       {snap_export}  {} bytes", snap.len());
    println!(
        "import snapshot       {snap_import}  (memcpy of its bytes {memcpy}, {:.1}x)",
        snap_import.median / memcpy.median
    );
    println!("  + to_string         {snap_read}");
    println!("  + load everything   {snap_load}  (history and tree, as a merge or export does)");
    println!("  + first edit        {snap_edit}  (a keystroke in the middle: the text's tree, no history)");
    if args.rich {
        let (rich_apply, rich) = time_runs(args.runs, || apply_rich(&flat, args.times, false));
        let (mut rich, marks) = rich?;
        check("rich apply", &rich.text("text").to_string());
        let (to_delta, delta) = time_runs(args.runs, || rich.text("text").to_delta());
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
            "apply (weft, rich)    {rich_apply}  {:.2}x plain weft, {:.2}x rope ({marks} bold marks, {made} not redundant)",
            rich_apply.median / weft_apply.median,
            ratio(rich_apply.median)
        );
        println!("to_delta (rich)       {to_delta}  {} runs", delta.len());
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
    }
    if args.rich {
        // The same with every mark on its own key: none is redundant.
        let (apply, doc) = time_runs(args.runs, || apply_rich(&flat, args.times, true));
        let (mut doc, marks) = doc?;
        check("rich apply (comments)", &doc.text("text").to_string());
        let (to_delta, delta) = time_runs(args.runs, || doc.text("text").to_delta());
        let made = (doc.debug_sizes().0 - ops) / 2;
        let size = doc
            .export(ExportMode::Updates {
                from: &VersionVector::new(),
            })?
            .len();
        println!(
            "apply (weft, comments) {apply}  {:.2}x plain weft ({marks} comment marks, {made} made)",
            apply.median / weft_apply.median
        );
        println!("to_delta (comments)   {to_delta}  {} runs", delta.len());
        println!(
            "export updates (comm.) {size} bytes: +{} bytes ({:.1} bytes per mark)",
            size - bytes.len(),
            (size - bytes.len()) as f64 / made.max(1) as f64
        );
    }
    let ok = ok && round_trip_ok;
    if ok {
        println!("text ok: matches endContent after apply and after import");
    }
    Ok(ok)
}
