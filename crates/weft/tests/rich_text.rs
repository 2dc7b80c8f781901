//! Rich-text conformance: marks, expand rules and deltas, each concurrent
//! scenario merged in both orders, through updates and through a fresh
//! document, with the peer ids both ways round.

use weft::{
    Attributes, Delta, Doc, Error, ExpandType, ExportMode, StyleConfig, Unit, Value, VersionVector,
};

const T: &str = "t";

fn full(doc: &mut Doc) -> Vec<u8> {
    doc.export(ExportMode::Updates {
        from: &VersionVector::new(),
    })
    .unwrap()
}

fn delta(doc: &mut Doc) -> Vec<Delta> {
    doc.assert_invariants();
    doc.text(T).to_delta()
}

fn ins(s: &str) -> Delta {
    Delta::insert(s)
}

fn ins_with(s: &str, attrs: &[(&str, Value)]) -> Delta {
    Delta::Insert {
        insert: s.into(),
        attributes: attrs
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    }
}

fn bold(s: &str) -> Delta {
    ins_with(s, &[("bold", true.into())])
}

/// A document as peer `peer` with the test config: the default plus keys
/// named after each rule.
fn doc(peer: u64) -> Doc {
    let mut d = Doc::new();
    d.set_peer_id(peer).unwrap();
    let mut c = StyleConfig::default();
    c.set("after", ExpandType::After)
        .set("before", ExpandType::Before)
        .set("both", ExpandType::Both)
        .set("none", ExpandType::None);
    d.config_text_style(c);
    d
}

/// Runs `setup` on a base document, then `a` and `b` concurrently on two
/// forks, and merges them every way: each side importing the other's
/// update, and fresh documents importing both full histories in both
/// orders; all with A < B and with A > B. Asserts that every result is
/// the same (text, delta, version) and returns the delta.
fn concurrent(setup: impl Fn(&mut Doc), a: impl Fn(&mut Doc), b: impl Fn(&mut Doc)) -> Vec<Delta> {
    let mut results: Vec<(String, Vec<Delta>)> = Vec::new();
    for (pa, pb) in [(10, 20), (20, 10)] {
        let mut base = doc(5);
        setup(&mut base);
        base.commit();
        let mut da = doc(pa);
        da.import(&full(&mut base)).unwrap();
        let mut db = doc(pb);
        db.import(&full(&mut base)).unwrap();
        a(&mut da);
        b(&mut db);
        let ua = da
            .export(ExportMode::Updates {
                from: &base.version(),
            })
            .unwrap();
        let ub = db
            .export(ExportMode::Updates {
                from: &base.version(),
            })
            .unwrap();
        let (fa, fb) = (full(&mut da), full(&mut db));
        let mut x = da.clone();
        x.import(&ub).unwrap();
        let mut y = db.clone();
        y.import(&ua).unwrap();
        let mut f1 = Doc::new();
        f1.import(&fa).unwrap();
        f1.import(&fb).unwrap();
        let mut f2 = Doc::new();
        f2.import(&fb).unwrap();
        f2.import(&fa).unwrap();
        // And a round trip of a merged document.
        let mut f3 = Doc::new();
        f3.import(&full(&mut x)).unwrap();
        let version = x.version();
        for (name, d) in [
            ("a+b", &mut x),
            ("b+a", &mut y),
            ("fresh a,b", &mut f1),
            ("fresh b,a", &mut f2),
            ("re-import", &mut f3),
        ] {
            assert_eq!(d.version(), version, "{name}: version");
            let text = d.text(T).to_string();
            results.push((format!("{name} with peers A={pa} B={pb}: {text}"), delta(d)));
        }
    }
    let (first_name, first) = &results[0];
    for (name, r) in &results[1..] {
        assert_eq!(r, first, "{name} differs from {first_name}");
    }
    first.clone()
}

fn setup_text(s: &'static str) -> impl Fn(&mut Doc) {
    move |d: &mut Doc| d.text(T).insert(0, s).unwrap()
}

#[test]
fn smoke() {
    let mut d = doc(1);
    let mut t = d.text(T);
    t.insert(0, "Hello World").unwrap();
    t.mark(0..5, "bold", true).unwrap();
    assert_eq!(t.to_delta(), vec![bold("Hello"), ins(" World")]);
    t.insert(5, "!").unwrap();
    assert_eq!(t.to_delta(), vec![bold("Hello!"), ins(" World")]);
    d.assert_invariants();
    let mut e = Doc::new();
    e.import(&full(&mut d)).unwrap();
    assert_eq!(delta(&mut e), vec![bold("Hello!"), ins(" World")]);
}
