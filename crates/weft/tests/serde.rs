//! The `serde` feature: values and deltas as Quill-compatible JSON.

use std::collections::BTreeMap;

use weft::{Delta, Doc, ExpandType, Value};

#[test]
fn deltas_serialize_as_quill_json() {
    let mut doc = Doc::new();
    let mut t = doc.text("t");
    t.insert(0, "Hi there").unwrap();
    t.mark(0..2, "bold", true).unwrap();
    t.mark(3..8, "link", "https://example.com").unwrap();
    let json = serde_json::to_string(&t.to_delta()).unwrap();
    assert_eq!(
        json,
        r#"[{"insert":"Hi","attributes":{"bold":true}},{"insert":" "},{"insert":"there","attributes":{"link":"https://example.com"}}]"#
    );
    let back: Vec<Delta> = serde_json::from_str(&json).unwrap();
    assert_eq!(back, t.to_delta());
}

#[test]
fn quill_json_applies() {
    let ops: Vec<Delta> = serde_json::from_str(
        r##"[{"insert":"Gandalf","attributes":{"bold":true}},{"insert":" the "},{"insert":"Grey","attributes":{"color":"#cccccc","size":12.5}}]"##,
    )
    .unwrap();
    let mut doc = Doc::new();
    doc.text("t").apply_delta(&ops).unwrap();
    let edit: Vec<Delta> = serde_json::from_str(
        r#"[{"retain":12},{"retain":4,"attributes":{"color":null}},{"delete":0}]"#,
    )
    .unwrap();
    doc.text("t").apply_delta(&edit).unwrap();
    assert_eq!(
        serde_json::to_string(&doc.text("t").to_delta()).unwrap(),
        r#"[{"insert":"Gandalf","attributes":{"bold":true}},{"insert":" the "},{"insert":"Grey","attributes":{"size":12.5}}]"#
    );
}

#[test]
fn values_are_plain_json() {
    let mut map = BTreeMap::new();
    map.insert("n".to_owned(), Value::I64(-3));
    map.insert(
        "l".to_owned(),
        Value::List(vec![Value::Null, Value::F64(0.5)]),
    );
    let v = Value::Map(map);
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(json, r#"{"l":[null,0.5],"n":-3}"#);
    assert_eq!(serde_json::from_str::<Value>(&json).unwrap(), v);
    assert_eq!(
        serde_json::to_string(&ExpandType::After).unwrap(),
        r#""After""#
    );
}
