//! History on B4 at 1x and 8x (`replay_times`): checkout of the middle
//! version from the latest (a rebuild), a forward step of 1,000 ops from a
//! checked-out version, `diff` of versions 1,000 ops apart, `fork_at` the
//! middle, against a snapshot import + `load()` of the same document
//! measured in the same run. The bars (B4): checkout at most 10x the
//! load; a 1,000-op step far below a rebuild.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use traces::Trace;
use weft::{Doc, ExportMode, Frontiers, OpId};

fn at(peer: u64, ops: u32) -> Frontiers {
    [OpId::new(peer, ops - 1)].into_iter().collect()
}

fn history(c: &mut Criterion) {
    let mut group = c.benchmark_group("history");
    group.sample_size(20);
    let trace = Trace::sequential("automerge-paper");
    for times in [1, 8] {
        let mut doc = benches::replay_times(&trace, times);
        doc.commit();
        let peer = doc.peer_id();
        let ops = doc.version().get(peer);
        let (mid, next) = (at(peer, ops / 2), at(peer, ops / 2 + 1000));
        let label = format!("b4x{times}");
        let snapshot = doc.export(ExportMode::Snapshot).unwrap();
        group.bench_function(BenchmarkId::new("load", &label), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&snapshot).unwrap();
                d.load().unwrap();
                d
            })
        });
        group.bench_function(BenchmarkId::new("checkout_middle", &label), |b| {
            b.iter(|| {
                doc.checkout(&mid).unwrap();
                doc.checkout_to_latest().unwrap();
            })
        });
        // Steps of 1,000 ops forward through the second half, timed one
        // by one (a rebuild at the middle, untimed, when they run out).
        let mut detached = doc.clone();
        let steps = (ops / 2 / 1000).max(1);
        group.bench_function(BenchmarkId::new("step_1000_ops", &label), |b| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for i in 0..iters {
                    let k = (i % u64::from(steps)) as u32;
                    if k == 0 {
                        detached.checkout(&mid).unwrap();
                    }
                    let t = std::time::Instant::now();
                    detached
                        .checkout(&at(peer, ops / 2 + 1000 * (k + 1)))
                        .unwrap();
                    total += t.elapsed();
                }
                total
            })
        });
        group.bench_function(BenchmarkId::new("diff_1000_ops", &label), |b| {
            b.iter(|| doc.diff(&mid, &next).unwrap())
        });
        group.bench_function(BenchmarkId::new("fork_at_middle", &label), |b| {
            b.iter(|| doc.fork_at(&mid).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, history);
criterion_main!(benches);
