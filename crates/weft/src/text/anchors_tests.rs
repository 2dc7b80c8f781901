//! Unit tests of the anchor tree (see `anchors.rs`): its queries against
//! stepping every anchor, and how many marks its nodes name.

use super::*;

/// SplitMix64, for reproducible inputs (the text module's unit tests
/// share it).
pub(in crate::text) struct Rng(pub u64);

impl Rng {
    /// Uniform in `0..n` (`0` when `n` is 0).
    pub fn below(&mut self, n: u32) -> u32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % u64::from(n.max(1))) as u32
    }
}

/// The active marks after `anchors[..rank]`, stepped one by one.
fn naive_active(anchors: &[Anchor], rank: usize) -> ActiveMarks {
    let mut active = ActiveMarks::default();
    for a in &anchors[..rank] {
        if a.end {
            active.close(a.mark);
        } else {
            active.open(a.mark, true);
        }
    }
    active
}

/// [`AnchorTree::find_place`] by stepping every anchor.
fn naive_place(anchors: &[Anchor], from: u32, to: u32, target: i32) -> PlaceSearch {
    let depth: i32 = anchors[..from as usize].iter().map(Anchor::delta).sum();
    let mut s = PlaceSearch {
        found: None,
        in_run: false,
        depth,
    };
    for (r, a) in anchors
        .iter()
        .enumerate()
        .take(to as usize)
        .skip(from as usize)
    {
        if a.is_place(s.in_run) && s.depth <= target {
            s.found = Some(r as u32);
            return s;
        }
        s.depth += a.delta();
        s.in_run = a.run_after(s.in_run);
    }
    s
}

fn contents(tree: &AnchorTree) -> Vec<Anchor> {
    let mut out = Vec::new();
    tree.for_each(|a| out.push(*a));
    out
}

/// Random marks (some with their end first, some never ended),
/// inserted anchor by anchor at random ranks, against a `Vec`.
#[test]
fn queries_match_stepping_every_anchor() {
    for seed in 0..40 {
        let mut rng = Rng(seed);
        let mut tree = AnchorTree::default();
        let mut model: Vec<Anchor> = Vec::new();
        let mut open: Vec<MarkIdx> = Vec::new();
        // A few deep trees (three levels and more).
        let marks = if seed < 36 {
            20 + rng.below(300)
        } else {
            2_000 + rng.below(1_000)
        };
        let mut seq = 0;
        let mut next_mark = 0;
        while next_mark < marks || !open.is_empty() {
            let mut anchor = |mark, end, rng: &mut Rng| {
                seq += 1;
                Anchor {
                    seq,
                    mark,
                    end,
                    sticks_left: rng.below(2) == 0,
                    chars_before: rng.below(3) as u8,
                }
            };
            let (a, at) = if next_mark < marks && (open.is_empty() || rng.below(2) == 0) {
                let a = anchor(MarkIdx::new(next_mark), false, &mut rng);
                let at = rng.below(model.len() as u32 + 1) as usize;
                if rng.below(20) > 0 {
                    open.push(MarkIdx::new(next_mark));
                }
                next_mark += 1;
                (a, at)
            } else {
                let mark = open.swap_remove(rng.below(open.len() as u32) as usize);
                let start = model.iter().position(|a| a.mark == mark).expect("started");
                // Mostly after the start, and mostly near it.
                let at = if rng.below(10) == 0 {
                    rng.below(start as u32 + 1) as usize
                } else {
                    let span = (model.len() - start) as u32;
                    let near = 1 + rng.below(40);
                    start + 1 + rng.below(span.min(near)) as usize
                };
                (anchor(mark, true, &mut rng), at)
            };
            model.insert(at, a);
            tree.insert(at as u32, a);
            if rng.below(8) == 0 {
                let r = rng.below(model.len() as u32);
                let c = rng.below(3) as u8;
                model[r as usize].chars_before = c;
                tree.set_chars_before(r, c);
            }
        }
        tree.assert_invariants();
        assert_eq!(contents(&tree), model, "seed {seed}: order");
        let bulk = AnchorTree::from_anchors(model.clone());
        bulk.assert_invariants();
        let every = if model.len() > 1_000 { 7 } else { 1 };
        for t in [&tree, &bulk] {
            for r in (0..=model.len() as u32).step_by(every) {
                assert_eq!(
                    t.active(r, |_| true),
                    naive_active(&model, r as usize),
                    "seed {seed}: active at {r}"
                );
                let depth: i32 = model[..r as usize].iter().map(Anchor::delta).sum();
                assert_eq!(t.depth(r), depth, "seed {seed}: depth at {r}");
                if (r as usize) < model.len() {
                    assert_eq!(t.get(r), Some(model[r as usize]));
                }
            }
            for _ in 0..200 {
                let from = rng.below(model.len() as u32 + 1);
                let to = from + rng.below(model.len() as u32 + 1 - from);
                let target = rng.below(6) as i32 - 2;
                let depth = t.depth(from);
                assert_eq!(
                    t.find_place(from, to, depth, target),
                    naive_place(&model, from, to, target),
                    "seed {seed}: place in {from}..{to} at most {target}"
                );
                let glued = (from..to)
                    .find(|&r| {
                        let a = model[r as usize];
                        !(a.sticks_left && a.chars_before == 0)
                    })
                    .unwrap_or(to);
                assert_eq!(t.first_unglued(from, to), glued);
            }
        }
    }
}

#[test]
fn many_small_marks_name_few_marks_per_node() {
    let mut tree = AnchorTree::default();
    for m in 0..10_000u32 {
        for end in [false, true] {
            let a = Anchor {
                seq: 2 * m + u32::from(end),
                mark: MarkIdx::new(m),
                end,
                sticks_left: end,
                chars_before: 1,
            };
            tree.insert(tree.len(), a);
        }
    }
    tree.assert_invariants();
    let most = tree
        .nodes
        .iter()
        .map(|n| n.summary.opened.len() + n.summary.closed.len())
        .max();
    assert!(most <= Some(2), "{most:?}");
    let mut active = ActiveMarks::default();
    active.open(MarkIdx::new(5_000), true);
    assert_eq!(tree.active(2 * 5_000 + 1, |_| true), active);
}
