//! Carrying out a cancel run, local or remote: the log puts its cancels
//! in force ([`OpLog::record_cancels`]) and the texts show what flipped.
//! A delete no longer in force shows its char again unless another delete
//! in force still removes it; a delete in force again removes it again;
//! a mark's flip needs nothing here (a cancelled mark styles nothing
//! where styles are read).

use std::collections::BTreeMap;

use crate::error::{Error, Result};
use crate::id::{Seq, TextIdx};
use crate::oplog::{Flip, Flipped, OpLog, OpRun};
use crate::text::TextTable;

/// Puts cancel run `run` (in the log already) in force and updates the
/// texts. O(ops whose effect flipped x log n), plus, for each flipped
/// delete, the deletes near its char (see `OpLog::not_deleted`).
///
/// # Errors
///
/// [`Error::Internal`] if the run breaks a rule the importer or the
/// local API checked (a bug).
pub(crate) fn cancel(log: &mut OpLog, texts: &mut TextTable, run: &OpRun) -> Result<()> {
    let flips = log.record_cancels(run)?;
    show_flips(log, texts, &flips)
}

/// Shows in the texts what `flips` (from [`OpLog::record_cancels`])
/// switched. Whichever way a char's delete flipped (and it may flip on
/// and back off along two chains of one run), what counts is whether a
/// delete in force removes the char now: if none does it shows (again),
/// else it goes.
///
/// # Errors
///
/// [`Error::Internal`] for a flip in a text the table lacks (a bug).
pub(crate) fn show_flips(log: &mut OpLog, texts: &mut TextTable, flips: &[Flip]) -> Result<()> {
    // Per text, the chars whose delete flipped.
    let mut flipped: BTreeMap<TextIdx, Vec<Seq>> = BTreeMap::new();
    for f in flips {
        if let Flipped::Delete(char) = f.what {
            flipped.entry(f.text).or_default().push(char);
        }
    }
    for (text, mut chars) in flipped {
        chars.sort_unstable();
        chars.dedup();
        let shown = log.not_deleted(text, &chars);
        let state = texts.get_mut(text).ok_or(Error::Internal {
            what: "cancel text",
        })?;
        // Chars visible already stay, deleted ones stay deleted.
        state.revive(&shown, log.content(), |seq| log.char_text(seq));
        for c in chars
            .into_iter()
            .filter(|c| shown.binary_search(c).is_err())
        {
            state.remote_delete(c..c + 1, log.content());
        }
        // Local positions need a focus whose start is known.
        state.drop_focus();
    }
    Ok(())
}
