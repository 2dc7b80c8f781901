//! Times Weft's history features on a sequential editing trace, against a
//! snapshot `load()` of the same document measured in the same run.
//!
//! ```text
//! cargo run --release -p examples --bin history -- [TRACE] [--times N] [--runs R]
//! ```
//!
//! The trace (default: automerge-paper, "B4") is replayed into a document
//! (`--times N` appends N copies). Versions `v1..v20` are evenly spaced in
//! its history (v20 is the final version). Reported, each the median of
//! `--runs` runs (default 5), in ms:
//!
//! - `load (baseline)`: import the document's snapshot and `load()` it;
//! - `checkout vK`: checkout from the latest version to `vK` (a rebuild);
//!   then `checkout median` over the 20, and its ratio to the baseline;
//! - `step vK -> vK+1`: moving a checked-out document forward to the next
//!   version (the ops in between merge into it), sweeping v1 -> v20;
//!   `back to latest`;
//! - `step 1000 ops`: moving forward by 1,000 ops from the middle (the
//!   median of ten steps after a first one, which builds the view's id
//!   index);
//! - `diff 1000 ops` and `diff whole`: `Doc::diff` between versions 1,000
//!   ops apart in the middle, and between the empty and the final version;
//! - `fork_at middle`.
//!
//! Exits non-zero if a checked-out text differs from a replay of the same
//! prefix of the trace.

use std::error::Error;
use std::process::ExitCode;

use examples::{count_arg, time_runs};
use traces::Trace;
use weft::{Doc, ExportMode, Frontiers, OpId};

const USAGE: &str = "\
usage: history [TRACE.json.gz] [--times N] [--runs R]

Replays a sequential trace, then times checkout to 20 evenly spaced versions, forward steps
between them, diff and fork_at, against a snapshot load() of the same document.";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("history: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Box<dyn Error>> {
    let (path, times, runs) = parse_args()?;
    let trace = Trace::load(&path)?;
    // The document, and the text after each patch count we check.
    let mut doc = Doc::new();
    doc.set_peer_id(1)?;
    let mut ops_after: Vec<u32> = Vec::new();
    let mut text_after: Vec<String> = Vec::new();
    let total_patches = trace.patch_count() * times;
    let mut n = 0usize;
    for _ in 0..times {
        let offset = doc.text("text").len();
        for p in trace.patches() {
            let mut t = doc.text("text");
            if p.del > 0 {
                t.delete(offset + p.pos, p.del)?;
            }
            if !p.ins.is_empty() {
                t.insert(offset + p.pos, &p.ins)?;
            }
            n += 1;
            if n * 20 % total_patches < 20 || n == total_patches {
                // At (about) every twentieth of the patches.
                text_after.push(t.to_string());
                ops_after.push(doc.version().get(1));
            }
        }
    }
    doc.commit();
    let mut points: Vec<(u32, String)> = ops_after.into_iter().zip(text_after).collect();
    points.dedup_by_key(|p| p.0);
    points.retain(|p| p.0 > 0);
    let versions: Vec<(Frontiers, &str)> = points
        .iter()
        .map(|(ops, text)| (frontiers_at(*ops), text.as_str()))
        .collect();
    let total_ops = doc.version().get(1);
    println!(
        "{path} x{times}: {total_ops} ops, {} chars, {} versions",
        doc.text("text").len(),
        versions.len()
    );

    let snapshot = doc.export(ExportMode::Snapshot)?;
    let (load, _) = time_runs(runs, || {
        let mut d = Doc::new();
        d.import(&snapshot).expect("own snapshot");
        d.load().expect("own snapshot");
        d
    });
    println!("load (baseline)       {load}");

    let mut medians = Vec::new();
    for (k, (f, text)) in versions.iter().enumerate() {
        let (s, ()) = time_runs(runs, || {
            doc.checkout(f).expect("own version");
            doc.checkout_to_latest().expect("attached");
        });
        doc.checkout(f)?;
        check(&mut doc, text, k)?;
        doc.checkout_to_latest()?;
        println!("checkout v{:<2}          {s}", k + 1);
        medians.push(s.median);
    }
    let median = examples::Stats::new(medians).median;
    println!(
        "checkout median       {median:9.3} ms = {:.2}x load (bar: <= 10x)",
        median / load.median
    );

    // Sweeps v1 -> v2 -> ... -> v20, each step timed; `runs` sweeps.
    let steps = versions.len() - 1;
    let mut step_times = vec![Vec::new(); steps];
    for _ in 0..runs.max(1) {
        doc.checkout(&versions[0].0)?;
        for (k, times) in step_times.iter_mut().enumerate() {
            let t = std::time::Instant::now();
            doc.checkout(&versions[k + 1].0)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            check(&mut doc, versions[k + 1].1, k + 1)?;
        }
    }
    for (k, times) in step_times.into_iter().enumerate() {
        println!(
            "step v{:<2} -> v{:<2}      {}",
            k + 1,
            k + 2,
            examples::Stats::new(times)
        );
    }
    let mut back = Vec::new();
    for _ in 0..runs.max(1) {
        doc.checkout(&versions[0].0)?;
        let t = std::time::Instant::now();
        doc.checkout_to_latest()?;
        back.push(t.elapsed().as_secs_f64() * 1e3);
    }
    println!("back to latest        {}", examples::Stats::new(back));

    let mid = total_ops / 2;
    let (a, b) = (frontiers_at(mid), frontiers_at(mid + 1000));
    // From the middle, ten steps of 1,000 ops after a first one (which
    // also builds the view's id index).
    let mut step = Vec::new();
    doc.checkout(&a)?;
    doc.checkout(&b)?;
    for i in 2..12 {
        let t = std::time::Instant::now();
        doc.checkout(&frontiers_at(mid + 1000 * i))?;
        step.push(t.elapsed().as_secs_f64() * 1e3);
    }
    doc.checkout_to_latest()?;
    println!("step 1000 ops         {}", examples::Stats::new(step));
    let (diff, d) = time_runs(runs, || doc.diff(&a, &b).expect("own versions"));
    println!(
        "diff 1000 ops         {diff} ({} delta ops)",
        d.first().map_or(0, |t| t.delta.len())
    );
    let (whole, _) = time_runs(runs, || {
        doc.diff(&Frontiers::new(), &doc.frontiers())
            .expect("own versions")
    });
    println!("diff whole            {whole}");
    let (fork, _) = time_runs(runs, || doc.fork_at(&a).expect("own version"));
    println!("fork_at middle        {fork}");
    Ok(())
}

/// The version after the first `ops` ops of peer 1.
fn frontiers_at(ops: u32) -> Frontiers {
    [OpId::new(1, ops - 1)].into_iter().collect()
}

fn check(doc: &mut Doc, expected: &str, k: usize) -> Result<(), Box<dyn Error>> {
    let got = doc.text("text").to_string();
    if got != expected {
        return Err(format!(
            "checkout v{}: {} chars, expected {}",
            k + 1,
            got.len(),
            expected.len()
        )
        .into());
    }
    Ok(())
}

fn parse_args() -> Result<(String, usize, usize), String> {
    let mut path = traces::dir()
        .join("sequential/automerge-paper.json.gz")
        .display()
        .to_string();
    let (mut times, mut runs) = (1, 5);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--times" => times = count_arg("--times", it.next())?,
            "--runs" => runs = count_arg("--runs", it.next())?,
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}\n{USAGE}")),
            _ => path = a,
        }
    }
    Ok((path, times, runs))
}
