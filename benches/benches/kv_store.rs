//! `weft-kv`: importing (checked and unchecked), reading and exporting a
//! table of 20,000 entries (about 1 MB).
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented pub fn"
)]

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use weft_kv::{MemKvStore, TableWriter};

fn table() -> Vec<u8> {
    let mut w = TableWriter::new();
    for i in 0..20_000u32 {
        let key = format!("doc/text/{i:08}");
        let value = format!("value {i} ").repeat(5);
        w.add(key.as_bytes(), value.as_bytes())
            .expect("sorted keys");
    }
    w.finish()
}

fn kv_store(c: &mut Criterion) {
    let bytes = table();
    let mut group = c.benchmark_group("kv_store");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("import_all", |b| {
        b.iter(|| {
            let mut s = MemKvStore::new();
            s.import_all(&bytes).expect("valid table");
            s
        })
    });
    group.bench_function("import_all_unchecked", |b| {
        b.iter(|| {
            let mut s = MemKvStore::new();
            s.import_all_unchecked(&bytes).expect("valid table");
            s
        })
    });
    let mut store = MemKvStore::new();
    store.import_all(&bytes).expect("valid table");
    group.bench_function("export_untouched", |b| b.iter(|| store.export_all()));
    group.bench_function("scan_all", |b| b.iter(|| store.scan(..).count()));
    group.finish();

    let mut group = c.benchmark_group("kv_store_get");
    group.bench_function("get_1000", |b| {
        b.iter(|| {
            (0..1000u32)
                .filter(|i| {
                    store
                        .get(format!("doc/text/{:08}", i * 20).as_bytes())
                        .is_some()
                })
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, kv_store);
criterion_main!(benches);
