//! Styles over long histories: reading or making styles costs about the
//! same however many marks come before.

use std::time::{Duration, Instant};

use weft::{Doc, ExpandType, StyleConfig};

const T: &str = "t";

/// A document as peer `peer`, with keys named after each expand rule.
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

/// A text of 40,000 chars with `marks` one-char bold marks spread over
/// its first 90%.
fn marked(marks: usize) -> Doc {
    let mut d = doc(1);
    let mut t = d.text(T);
    t.insert(0, &"abcdefghij".repeat(4_000)).unwrap();
    let step = 36_000 / marks;
    for i in 0..marks {
        t.mark(i * step..i * step + 1, "bold", true).unwrap();
    }
    d
}

/// Time of 50 marks and 200 `attributes_at` calls right of every earlier
/// mark of `base` (on a copy, made outside the timing).
fn style_work(base: &Doc) -> Duration {
    let mut d = base.clone();
    let mut t = d.text(T);
    let start = Instant::now();
    for k in 0..50 {
        let at = 37_000 + 20 * k;
        t.mark(at..at + 2, "italic", true).unwrap();
    }
    for k in 0..200 {
        let attributes = t.attributes_at(38_000 + 7 * k).unwrap();
        assert!(attributes.len() <= 1);
    }
    start.elapsed()
}

#[test]
fn styles_right_of_many_marks_cost_about_the_same() {
    let few = marked(2_000);
    let many = marked(16_000);
    // Interleaved, best of many rounds: other tests share the machine.
    let (mut t_few, mut t_many) = (Duration::MAX, Duration::MAX);
    for _ in 0..15 {
        t_few = t_few.min(style_work(&few));
        t_many = t_many.min(style_work(&many));
    }
    // Replaying every earlier anchor made this ~8x (linear in the marks);
    // an O(log n) lookup keeps it near 1x.
    assert!(
        t_many < 4 * t_few,
        "right of 16,000 marks: {t_many:?}, right of 2,000: {t_few:?}"
    );
}
