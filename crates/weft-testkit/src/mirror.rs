//! [`Mirror`]: a copy of what a document shows, kept only from its change
//! events (text "t" in every unit, and every map), to check events
//! against the document.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use weft::{Delta, Doc, Unit, Value};

use crate::map_contents;

/// The units mirrors keep, in their order.
const UNITS: [Unit; 3] = [Unit::Char, Unit::Utf16, Unit::Utf8];

/// What a mirror holds: text "t" in each unit, and every map.
#[derive(Default)]
struct Seen {
    texts: [Vec<Delta>; 3],
    maps: BTreeMap<String, BTreeMap<String, Value>>,
}

/// A copy of text "t" of a document (in chars, UTF-16 units and UTF-8
/// bytes) and of its maps, kept only from its change events.
pub struct Mirror {
    seen: Arc<Mutex<Seen>>,
    _subs: Vec<weft::Subscription>,
}

impl Mirror {
    /// Starts mirroring `doc` (committing its open change) from what it
    /// shows now.
    pub fn attach(doc: &mut Doc) -> Mirror {
        doc.commit();
        let now = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        let maps = map_contents(doc)
            .into_iter()
            .map(|(n, e)| (n, e.into_iter().collect()))
            .collect();
        let seen = Arc::new(Mutex::new(Seen {
            texts: [now.clone(), now.clone(), now],
            maps,
        }));
        let subs = UNITS
            .into_iter()
            .enumerate()
            .map(|(k, unit)| {
                let seen = Arc::clone(&seen);
                doc.subscribe_in(unit, move |event: &weft::DocEvent| {
                    let mut s = seen.lock().unwrap_or_else(|e| e.into_inner());
                    for diff in event.texts.iter().filter(|t| t.name == "t") {
                        if let Err(e) = diff.apply_to(&mut s.texts[k], unit) {
                            panic!("an event does not apply to the mirror: {e}\n{diff:?}");
                        }
                    }
                    if k == 0 {
                        for diff in &event.maps {
                            let map = s.maps.entry(diff.name.clone()).or_default();
                            for (key, value) in &diff.changes {
                                match value {
                                    Some(v) => map.insert(key.clone(), v.clone()),
                                    None => map.remove(key),
                                };
                            }
                        }
                    }
                })
            })
            .collect();
        Mirror { seen, _subs: subs }
    }

    /// Checks the mirror against what `doc` shows (it must have no open
    /// change: events come on commit).
    ///
    /// # Panics
    ///
    /// When a mirror differs from what `doc` shows.
    pub fn check(&self, doc: &Doc, what: &dyn std::fmt::Debug) {
        let now = doc.get_text("t").map_or_else(Vec::new, |t| t.to_delta());
        let s = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        for (k, unit) in UNITS.into_iter().enumerate() {
            assert_eq!(s.texts[k], now, "{what:?}: the mirror ({unit:?}) differs");
        }
        let maps: Vec<(String, Vec<(String, Value)>)> = s
            .maps
            .iter()
            .map(|(n, e)| (n.clone(), e.clone().into_iter().collect::<Vec<_>>()))
            .filter(|(_, e)| !e.is_empty())
            .collect();
        assert_eq!(maps, map_contents(doc), "{what:?}: the map mirror differs");
    }
}
