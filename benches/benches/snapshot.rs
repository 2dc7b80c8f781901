//! Snapshots of B4 and the other traces: export, lazy import, import +
//! read the whole text, import + one keystroke in the middle ("open and
//! type": builds the text's tree, not the history), import + load
//! everything (what a merge or an export first costs), and a `memcpy` of
//! the snapshot's bytes as the floor measured in the same run; the same
//! for a shallow snapshot at the latest version (`shallow_*`). The bars
//! (B4): export <= 1.0 ms, import until readable <= 165 us, open and type
//! at most half of diamond-types' load + edit (`../shared/peers --what
//! decode`, row `decode_edit`); a shallow snapshot at most 63,352 bytes
//! (Loro's) with import + read at or below the full snapshot's.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use traces::Trace;
use weft::{Doc, ExportMode};

fn snapshot(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot");
    for name in benches::TRACES {
        let trace = Trace::sequential(name);
        let mut doc = benches::replay(&trace);
        let bytes = doc.export(ExportMode::Snapshot).unwrap();
        let text = doc.text("text").to_string();
        group.bench_function(BenchmarkId::new("export", name), |b| {
            b.iter(|| doc.export(ExportMode::Snapshot).unwrap())
        });
        group.bench_function(BenchmarkId::new("memcpy", name), |b| {
            b.iter(|| bytes.to_vec())
        });
        group.bench_function(BenchmarkId::new("import", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&bytes).unwrap();
                d
            })
        });
        group.bench_function(BenchmarkId::new("import_read", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&bytes).unwrap();
                let s = d.text("text").to_string();
                assert_eq!(s.len(), text.len());
                s
            })
        });
        let latest = doc.frontiers();
        let shallow = doc.export(ExportMode::ShallowSnapshot(&latest)).unwrap();
        group.bench_function(BenchmarkId::new("shallow_import_read", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&shallow).unwrap();
                let s = d.text("text").to_string();
                assert_eq!(s.len(), text.len());
                s
            })
        });
        group.bench_function(BenchmarkId::new("shallow_export", name), |b| {
            b.iter(|| doc.export(ExportMode::ShallowSnapshot(&latest)).unwrap())
        });
        group.bench_function(BenchmarkId::new("shallow_import_load", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&shallow).unwrap();
                d.load().unwrap();
                d
            })
        });
        group.bench_function(BenchmarkId::new("import_edit", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&bytes).unwrap();
                let mut t = d.text("text");
                let middle = t.len() / 2;
                t.insert(middle, "x").unwrap();
                d
            })
        });
        group.bench_function(BenchmarkId::new("import_load", name), |b| {
            b.iter(|| {
                let mut d = Doc::new();
                d.import(&bytes).unwrap();
                d.load().unwrap();
                d
            })
        });
    }
    group.finish();
}

criterion_group!(benches, snapshot);
criterion_main!(benches);
