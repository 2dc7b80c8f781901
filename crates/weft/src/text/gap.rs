//! Where text typed in a styled text goes: after the anchors glued to the
//! char before it, unless that would bring back a mark whose text was all
//! deleted (the rule: [`TextState::rich_insert_point`]).

use generic_btree::LeafIndex;
use smallvec::SmallVec;

use super::item::{Item, ANCHOR_END, STICKS_LEFT};
use super::{InsertPoint, TextState};

/// Most items of a gap between two visible chars that a styled insert
/// looks at (see [`TextState::rich_insert_point`]).
const GAP_SCAN: usize = 64;

/// A mark with an anchor in a gap: (mark, ordinal of its start anchor in
/// the gap, ordinal of its end anchor).
type GapMark = (u32, Option<usize>, Option<usize>);

/// Where [`TextState::rich_insert_point`] puts new text, by gap item.
#[derive(Clone, Copy)]
enum Place {
    /// After the visible char before the gap and its left-sticky anchors.
    Default,
    /// Right after the first char of the deleted run `i`.
    Inside(usize),
    /// After the deleted run `i` and its left-sticky anchors.
    After(usize),
}

impl TextState {
    /// [`TextState::rich_insert_point`], then the origins of `item`, which
    /// are always chars: the text goes after the anchors glued to the char
    /// before it and before those glued to the char after it. Kept out of
    /// line so plain-text typing stays small.
    #[inline(never)]
    pub(super) fn styled_insert_point(
        &mut self,
        point: InsertPoint,
        item: &mut Item,
        content: &str,
    ) -> InsertPoint {
        let point = self.rich_insert_point(point, content);
        item.origin_left = point.origin_left;
        item.origin_right = self.non_anchor_from(point.leaf, point.index);
        point
    }

    /// Where text typed right after a visible char goes in a styled text.
    /// `point` is right after that char. By default the text goes after
    /// the anchors glued to that char. When the gap up to the next visible
    /// char holds a mark with no text left (both anchors in the gap), the
    /// text instead goes after the first deleted char where no such mark
    /// covers it and every other mark covers it exactly as by default, so
    /// typing where a mark's text was deleted does not bring the mark
    /// back. The gap is scanned up to [`GAP_SCAN`] items.
    pub(super) fn rich_insert_point(&mut self, point: InsertPoint, content: &str) -> InsertPoint {
        // The gap: (item, leaf, index), up to the next visible char.
        let mut gap: SmallVec<[(Item, LeafIndex, usize); 16]> = SmallVec::new();
        let (mut leaf, mut index) = (point.leaf, point.index);
        let mut bounded = true;
        loop {
            let Some(item) = self.chunk(leaf).items.get(index).copied() else {
                match self.next_leaf(leaf) {
                    Some(next) => (leaf, index) = (next, 0),
                    None => break,
                }
                continue;
            };
            if item.is_visible_text() {
                break;
            }
            if gap.len() == GAP_SCAN {
                bounded = false;
                break;
            }
            gap.push((item, leaf, index));
            index += 1;
        }
        let sticks_left =
            |e: &(Item, LeafIndex, usize)| e.0.is_anchor() && e.0.anchor & STICKS_LEFT != 0;
        // Candidate places: after the char before the gap, or after a
        // deleted char; each past the left-sticky anchors glued there.
        let after = |from: usize| from + gap[from..].iter().take_while(|e| sticks_left(e)).count();
        let default = after(0);
        let mut place = Place::Default;
        if bounded && gap.iter().any(|e| e.0.is_anchor()) {
            // Per mark with an anchor in the gap: (start, end) ordinals.
            let mut marks: SmallVec<[GapMark; 8]> = SmallVec::new();
            for (i, e) in gap.iter().enumerate() {
                if !e.0.is_anchor() {
                    continue;
                }
                let m = e.0.mark();
                let slot = match marks.iter_mut().find(|x| x.0 == m) {
                    Some(slot) => slot,
                    None => {
                        marks.push((m, None, None));
                        marks.last_mut().expect("just pushed")
                    }
                };
                if e.0.anchor & ANCHOR_END != 0 {
                    slot.2 = Some(i);
                } else {
                    slot.1 = Some(i);
                }
            }
            let covers = |&(_, s, e): &GapMark, p: usize| {
                s.is_none_or(|s| s < p) && e.is_none_or(|e| e >= p)
            };
            let dead = |m: &GapMark| m.1.is_some() && m.2.is_some();
            if marks.iter().any(|m| dead(m) && covers(m, default)) {
                // Candidates left to right: right after the first char of a
                // deleted run (inside it), then after its last char.
                let mut candidates: SmallVec<[(usize, Place); 16]> = SmallVec::new();
                for (i, e) in gap.iter().enumerate() {
                    if !e.0.is_anchor() {
                        if e.0.len > 1 {
                            candidates.push((i + 1, Place::Inside(i)));
                        }
                        candidates.push((after(i + 1), Place::After(i)));
                    }
                }
                let ok = |p: usize| {
                    marks.iter().all(|m| {
                        if dead(m) {
                            !covers(m, p)
                        } else {
                            covers(m, p) == covers(m, default)
                        }
                    })
                };
                match candidates.into_iter().find(|c| ok(c.0)) {
                    Some(c) => place = c.1,
                    None => {
                        // No place escapes (a mark expanding both ways):
                        // the caller unmarks the new text.
                        self.resurrected.extend(
                            marks
                                .iter()
                                .filter(|m| dead(m) && covers(m, default))
                                .map(|m| m.0),
                        );
                    }
                }
            }
        }
        let point = match place {
            Place::Default => {
                let d = default.checked_sub(1).map(|i| gap[i]);
                match d {
                    Some((_, leaf, index)) => InsertPoint {
                        leaf,
                        index: index + 1,
                        origin_left: point.origin_left,
                    },
                    None => point,
                }
            }
            Place::After(i) => {
                let last = after(i + 1) - 1;
                let (_, leaf, index) = gap[last];
                InsertPoint {
                    leaf,
                    index: index + 1,
                    origin_left: gap[i].0.end() - 1,
                }
            }
            Place::Inside(i) => {
                let (item, leaf, index) = gap[i];
                self.move_focus_to(leaf);
                let (leaf, index) = self.make_room(leaf, index, 2);
                let chunk = self.chunk_mut(leaf);
                let right = chunk.items[index].split(1, content.as_bytes());
                chunk.items.insert(index + 1, right);
                InsertPoint {
                    leaf,
                    index: index + 1,
                    origin_left: item.seq,
                }
            }
        };
        self.move_focus_to(point.leaf);
        point
    }

    /// Moves the focus forward, leaf by leaf, to `leaf` (after it), so its
    /// start counts stay known.
    fn move_focus_to(&mut self, leaf: LeafIndex) {
        while let Some(f) = self.focus {
            if f.leaf == leaf {
                break;
            }
            let next = self.next_leaf(f.leaf).expect("the leaf is after the focus");
            let start = self.start_after(f.leaf);
            self.set_focus(next, start);
        }
    }
}
