//! Reads through a shared `&Doc`: text views, exports, and a lazily
//! imported snapshot served without `&mut`.

use weft::{Delta, Doc, ExportMode, TextRef, Unit, VersionVector};

fn rich_doc() -> Doc {
    let mut doc = Doc::new();
    doc.set_peer_id(1).unwrap();
    doc.text("plain").insert(0, "just text, no marks").unwrap();
    let mut body = doc.text("body");
    body.insert(0, "Hello brave new world").unwrap();
    body.mark(0..5, "bold", true).unwrap();
    body.mark(12..15, "link", "https://example.com").unwrap();
    doc.commit();
    doc
}

#[test]
fn a_doc_can_be_shared_between_threads() {
    fn shared<T: Send + Sync>() {}
    shared::<Doc>();
    shared::<TextRef<'static>>();

    let doc = rich_doc();
    let expected = doc.get_text("body").unwrap().to_delta();
    std::thread::scope(|s| {
        let readers: Vec<_> = (0..2)
            .map(|_| s.spawn(|| doc.get_text("body").unwrap().to_delta()))
            .collect();
        for r in readers {
            assert_eq!(r.join().unwrap(), expected);
        }
    });
}

#[test]
fn views_of_several_texts_read_like_the_handles() {
    let mut doc = rich_doc();
    let handle_body = (doc.text("body").to_string(), doc.text("body").to_delta());
    let handle_plain = doc.text("plain").to_string();
    let names: Vec<String> = doc.text_names().map(str::to_owned).collect();

    let d = &doc;
    let (body, plain) = (d.get_text("body").unwrap(), d.get_text("plain").unwrap());
    assert_eq!((body.to_string(), body.to_delta()), handle_body);
    assert_eq!(plain.to_string(), handle_plain);
    assert_eq!(body.name(), "body");
    assert_eq!(body.len(), 21);
    assert_eq!(body.len_in(Unit::Utf16), body.len_utf16());
    assert_eq!(body.slice(6..11).unwrap(), "brave");
    assert_eq!(
        body.attributes_at(1).unwrap().get("bold"),
        Some(&true.into())
    );
    assert_eq!(
        body.slice_delta(3..7).unwrap(),
        vec![
            Delta::insert_with("lo", [("bold", true)]),
            Delta::insert(" b")
        ]
    );
    assert_eq!(body.convert_pos(5, Unit::Char, Unit::Utf8).unwrap(), 5);
    assert!(body.slice(3..30).is_err());
    assert!(body.attributes_at(21).is_err());
    // A view never creates a text.
    assert!(d.get_text("absent").is_none());
    assert_eq!(d.text_names().collect::<Vec<_>>(), names);
}

#[test]
fn a_lazy_snapshot_serves_views_and_loads_once() {
    let mut original = rich_doc();
    let bytes = original.export(ExportMode::Snapshot).unwrap();
    let mut doc = Doc::new();
    doc.import(&bytes).unwrap();
    doc.set_peer_id(1).unwrap();

    // A text without marks is read from the snapshot: nothing loads.
    assert_eq!(
        doc.get_text("plain").unwrap().to_string(),
        "just text, no marks"
    );
    assert!(doc.is_lazy());
    // A text with marks too: the snapshot stores its styles.
    assert_eq!(
        doc.get_text("body").unwrap().to_delta(),
        original.text("body").to_delta()
    );
    assert!(doc.is_lazy());
    // An export through `&Doc` needs the history: it is loaded on the
    // side, and the copy kept.
    assert_eq!(doc.export(ExportMode::Snapshot).unwrap(), bytes);
    assert!(!doc.is_lazy());
    // The next edit takes the loaded copy over and goes on from there
    // (an edit of another text first: the copy must not go stale).
    doc.text("plain").insert(0, "(").unwrap();
    original.text("plain").insert(0, "(").unwrap();
    doc.text("body").insert(5, ",").unwrap();
    original.text("body").insert(5, ",").unwrap();
    assert_eq!(doc.text("plain").to_string(), "(just text, no marks");
    assert_eq!(
        doc.text("body").to_delta(),
        original.text("body").to_delta()
    );
    assert_eq!(doc.version(), original.version());
    assert_eq!(
        doc.history_runs().unwrap(),
        original.history_runs().unwrap()
    );
    doc.assert_invariants();
}

#[test]
fn an_export_through_a_shared_reference_includes_the_open_change() {
    let mut alice = Doc::new();
    alice.set_peer_id(1).unwrap();
    let mut bob = Doc::new();
    bob.set_peer_id(2).unwrap();
    alice.text("t").insert(0, "Hello").unwrap();
    // Not committed: the export still carries the open change.
    let shared: &Doc = &alice;
    let first = shared
        .export(ExportMode::Updates {
            from: &VersionVector::new(),
        })
        .unwrap();
    bob.import(&first).unwrap();
    assert_eq!(bob.get_text("t").unwrap().to_string(), "Hello");
    assert_eq!(bob.version(), alice.version());

    // Alice types on (her change grows); Bob types concurrently.
    alice.text("t").insert(5, " world").unwrap();
    bob.text("t").insert(0, ">").unwrap();
    let to_bob = alice
        .export(ExportMode::Updates {
            from: &bob.version(),
        })
        .unwrap();
    let to_alice = bob
        .export(ExportMode::Updates {
            from: &alice.version(),
        })
        .unwrap();
    bob.import(&to_bob).unwrap();
    alice.import(&to_alice).unwrap();
    assert_eq!(alice.get_text("t").unwrap().to_string(), ">Hello world");
    assert_eq!(bob.get_text("t").unwrap().to_string(), ">Hello world");
    assert_eq!(alice.frontiers(), bob.frontiers());
    assert_eq!(alice.history_runs().unwrap(), bob.history_runs().unwrap());
}
