//! Replays a concurrent editing trace (default: friendsforever) by forking
//! and merging Weft documents through updates, and prints timings.
//!
//! ```text
//! cargo run --release -p examples --bin concurrent -- [TRACE] [--runs R]
//! ```
//!
//! Exits non-zero when the merged text differs from `endContent`.

use std::error::Error;
use std::process::ExitCode;

use examples::{replay_concurrent, time_runs};
use traces::Trace;
use weft::{ExportMode, VersionVector};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("concurrent: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, Box<dyn Error>> {
    let mut path = traces::dir()
        .join("concurrent/friendsforever.json.gz")
        .display()
        .to_string();
    let mut runs = 5;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--runs" => runs = it.next().ok_or("--runs needs a value")?.parse()?,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}").into()),
            _ => path = a,
        }
    }
    let trace = Trace::load(&path)?;
    let (stats, doc) = time_runs(runs, || replay_concurrent(&trace));
    let mut doc = doc?;
    let text = doc.text("text").to_string();
    let ok = text == trace.end_content;
    println!(
        "trace {}: {} txns, {} patches, final {} chars",
        path.rsplit('/').next().unwrap_or(&path),
        trace.txns.len(),
        trace.patch_count(),
        trace.end_content.chars().count()
    );
    println!("fork + merge replay   {stats}");
    let bytes = doc.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })?;
    let (_, sizes) = time_runs(1, || doc.debug_sizes());
    println!(
        "history: {} bytes as updates; ops {}, op runs {}, changes {}, text items {}",
        bytes.len(),
        sizes.0,
        sizes.1,
        sizes.2,
        sizes.3
    );
    if ok {
        println!("text ok: matches endContent");
    } else {
        eprintln!("MISMATCH: merged text differs from endContent");
    }
    Ok(ok)
}
