//! The Map container (issue 13's map bars):
//!
//! - `map_set`: 1,000,000 `set`s over 10,000 keys (ints) into a fresh
//!   document, against the same writes into a `BTreeMap<String, Value>`
//!   measured in the same run (`btreemap_insert`).
//! - `map_export`: that document's history as an update, and as a
//!   snapshot; `map_import`: each imported into an empty document (the
//!   snapshot's history loads at import: maps are read from it).
//! - `map_fork`: `Doc::fork` of a document holding a 10,000-key map (made
//!   by 10,000 sets), against a deep copy of the same entries as a
//!   `BTreeMap<String, Value>` (`deep_copy`). The bar: fork at least 10x
//!   faster.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use std::collections::BTreeMap;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use weft::{Doc, ExportMode, Value, VersionVector};

const KEYS: usize = 10_000;
const SETS: usize = 1_000_000;

fn keys() -> Vec<String> {
    (0..KEYS).map(|i| format!("key{i}")).collect()
}

/// `n` sets, op `i` writing key `i * 7919 % KEYS` (every key, shuffled)
/// with value `i`.
fn filled(n: usize, keys: &[String]) -> Doc {
    let mut doc = Doc::new();
    doc.set_peer_id(1).expect("valid peer id");
    let mut map = doc.map("m");
    for i in 0..n {
        let k = &keys[i * 7919 % KEYS];
        map.set(k, i as i64).expect("set");
    }
    doc.commit();
    doc
}

fn map_set(c: &mut Criterion) {
    let keys = keys();
    let mut group = c.benchmark_group("map_set");
    group.sample_size(10);
    group.bench_function("weft_1m_sets_10k_keys", |b| {
        b.iter(|| black_box(filled(SETS, &keys)));
    });
    group.bench_function("btreemap_insert", |b| {
        b.iter(|| {
            let mut m: BTreeMap<String, Value> = BTreeMap::new();
            for i in 0..SETS {
                let k = &keys[i * 7919 % KEYS];
                m.insert(k.clone(), Value::I64(i as i64));
            }
            black_box(m)
        });
    });
    group.finish();
}

fn map_export_import(c: &mut Criterion) {
    let keys = keys();
    let doc = filled(SETS, &keys);
    let updates = doc
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .expect("export");
    let snapshot = doc.export(ExportMode::Snapshot).expect("export");
    println!(
        "1M sets over 10k keys: updates {} bytes, snapshot {} bytes",
        updates.len(),
        snapshot.len()
    );
    let mut group = c.benchmark_group("map_export");
    group.sample_size(10);
    group.bench_function("updates", |b| {
        b.iter(|| {
            doc.export(ExportMode::Updates {
                from: &VersionVector::new(),
            })
        });
    });
    group.bench_function("snapshot", |b| b.iter(|| doc.export(ExportMode::Snapshot)));
    group.finish();
    let mut group = c.benchmark_group("map_import");
    group.sample_size(10);
    group.bench_function("updates", |b| {
        b.iter(|| {
            let mut d = Doc::new();
            d.import(&updates).expect("import");
            d
        });
    });
    group.bench_function("snapshot", |b| {
        b.iter(|| {
            let mut d = Doc::new();
            d.import(&snapshot).expect("import");
            d
        });
    });
    group.finish();
}

fn map_fork(c: &mut Criterion) {
    let keys = keys();
    let doc = filled(KEYS, &keys);
    let copy: BTreeMap<String, Value> = doc
        .get_map("m")
        .expect("written")
        .iter()
        .map(|(k, v)| (k.to_owned(), v.clone()))
        .collect();
    assert_eq!(copy.len(), KEYS);
    let mut group = c.benchmark_group("map_fork");
    group.bench_function("fork_10k_keys", |b| b.iter(|| black_box(doc.fork())));
    group.bench_function("deep_copy", |b| b.iter(|| black_box(copy.clone())));
    group.finish();
}

criterion_group!(benches, map_set, map_export_import, map_fork);
criterion_main!(benches);
