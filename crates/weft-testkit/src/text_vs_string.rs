//! [`run_text_vs_string`]: one document against a plain `String`.

use weft::{Error, Unit};

use crate::action::{block_attrs, delete_in, insert_in, len_in, new_doc, Action, TEXTS};

/// Byte offset in `s` of position `pos` in `unit`, or `None` when that
/// position falls inside a char.
fn model_pos(s: &str, unit: Unit, pos: usize) -> Option<usize> {
    match unit {
        Unit::Char => Some(s.char_indices().nth(pos).map_or(s.len(), |(b, _)| b)),
        Unit::Utf8 => s.is_char_boundary(pos).then_some(pos),
        Unit::Utf16 => {
            let mut units = 0;
            for (b, c) in s.char_indices() {
                if units == pos {
                    return Some(b);
                }
                if units > pos {
                    return None;
                }
                units += c.len_utf16();
            }
            (units == pos).then_some(s.len())
        }
    }
}

/// One document against a plain `String`: every insert and delete (in any
/// unit) is applied to both; the doc must fail exactly when the position
/// falls inside a char, and the texts and their lengths in all three units
/// must agree after every step.
///
/// # Panics
///
/// When they do not.
pub fn run_text_vs_string(actions: &[Action]) {
    let mut doc = new_doc(1);
    let mut model = String::new();
    for action in actions {
        let mut text = doc.text("t");
        match *action {
            Action::Insert {
                pos, unit, text: t, ..
            } => {
                let s = TEXTS[t as usize % TEXTS.len()];
                let u = unit.unit();
                let pos = pos as usize % (len_in(&text, u) + 1);
                let r = insert_in(&mut text, unit, pos, s);
                match model_pos(&model, u, pos) {
                    Some(b) => {
                        r.expect("insert at a char boundary");
                        model.insert_str(b, s);
                    }
                    None => assert_eq!(r, Err(Error::NotCharBoundary { pos, unit: u })),
                }
            }
            Action::Delete { pos, len, unit, .. } => {
                let u = unit.unit();
                let total = len_in(&text, u);
                if total == 0 {
                    continue;
                }
                let pos = pos as usize % total;
                let n = (len as usize).min(total - pos);
                let r = delete_in(&mut text, unit, pos, n);
                match (model_pos(&model, u, pos), model_pos(&model, u, pos + n)) {
                    (Some(a), Some(b)) => {
                        r.expect("delete between char boundaries");
                        model.replace_range(a..b, "");
                    }
                    _ => assert!(
                        matches!(r, Err(Error::NotCharBoundary { .. })),
                        "expected NotCharBoundary, got {r:?}"
                    ),
                }
            }
            Action::Embed { pos, value, .. } => {
                let pos = pos as usize % (text.len() + 1);
                text.insert_embed(pos, i64::from(value))
                    .expect("an embed at a char position");
                let b = model_pos(&model, Unit::Char, pos).expect("a char position");
                model.insert(b, '\u{FFFC}');
            }
            Action::Block { pos, op, .. } => {
                let pos = pos as usize % (text.len() + 1);
                let b = model_pos(&model, Unit::Char, pos).expect("a char position");
                if pos < text.len() && text.block_at(pos).expect("in bounds").is_some() {
                    if op % 2 == 0 {
                        text.update_block(pos, block_attrs(op))
                            .expect("a block marker");
                    } else {
                        text.join_block(pos).expect("a block marker");
                        model.remove(b);
                    }
                } else {
                    text.split_block(pos, block_attrs(op))
                        .expect("a block at a char position");
                    model.insert(b, '\u{FFFC}');
                }
            }
            Action::DeleteContainer { map: false, .. } => {
                doc.delete_text("t").expect("a text just named");
                model.clear();
            }
            _ => continue,
        }
        let text = doc.text("t");
        assert_eq!(text.to_string(), model);
        assert_eq!(text.len(), model.chars().count());
        assert_eq!(text.len_utf8(), model.len());
        assert_eq!(text.len_utf16(), model.encode_utf16().count());
    }
    doc.assert_invariants();
}
