//! The layer test: every `crate::` path in the library's code (tests
//! aside) names a module of a lower layer than its own, by the list in
//! `lib.rs`. So a change that would make two modules need each other
//! fails here, with the file and the path that did it.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layer of each top-level module, from the list in `lib.rs`.
fn layers(lib: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("// layer ") else {
            continue;
        };
        let (n, mods) = rest
            .split_once(':')
            .expect("a layer line: `// layer N: mods`");
        let n: usize = n.trim().parse().expect("a layer number");
        for m in mods.split_whitespace() {
            assert!(out.insert(m.to_owned(), n).is_none(), "{m} is listed twice");
        }
    }
    out
}

/// What `lib.rs` re-exports at the crate root: name -> module.
fn root_names(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in lib.lines() {
        let Some(rest) = line.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.trim_end_matches(';').split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            out.insert(name.trim().to_owned(), module.to_owned());
        }
    }
    out
}

/// The `.rs` files under `dir`.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("the source folder") {
        let path = entry.expect("a folder entry").path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without its test modules: from a `#[cfg(test)]`
/// on, and the files that such a line declares (`test_files`).
fn library_code<'a>(text: &'a str, test_files: &mut BTreeSet<String>) -> &'a str {
    let mut lines = text.lines().peekable();
    let mut offset = 0;
    while let Some(line) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            // A declared file (`mod x;`, possibly after `#[path]`).
            let mut next = lines.peek().copied().unwrap_or("");
            let mut path = None;
            if let Some(p) = next.trim().strip_prefix("#[path = \"") {
                path = p.split('"').next().map(str::to_owned);
                lines.next();
                next = lines.peek().copied().unwrap_or("");
            }
            let decl = next.trim().trim_start_matches("pub(super) ");
            if let Some(name) = decl.strip_prefix("mod ").and_then(|d| d.strip_suffix(';')) {
                test_files.insert(path.unwrap_or_else(|| format!("{name}.rs")));
                offset += line.len() + 1;
                continue;
            }
            return &text[..offset];
        }
        offset += line.len() + 1;
    }
    text
}

/// The top-level modules a piece of code names with `crate::`.
fn named_modules(code: &str, roots: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for line in code.lines() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("crate::") {
            rest = &rest[i + "crate::".len()..];
            let mut names = Vec::new();
            if let Some(group) = rest.strip_prefix('{') {
                // `use crate::{a::b, c};`: the first segment of each item.
                let end = group.find('}').unwrap_or(group.len());
                names.extend(group[..end].split(',').map(|s| s.trim().to_owned()));
            } else {
                names.push(rest.to_owned());
            }
            for n in names {
                let first: String = n
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                let module = roots.get(&first).cloned().unwrap_or(first);
                if !module.is_empty() {
                    out.push(module);
                }
            }
        }
    }
    out
}

#[test]
fn no_module_uses_its_own_layer_or_a_higher_one() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let layers = layers(&lib);
    let roots = root_names(&lib);
    let mut paths = Vec::new();
    files(&src, &mut paths);
    paths.sort();
    // Declarations first, so a test-only file is known before it is read.
    let texts: Vec<(PathBuf, String)> = paths
        .into_iter()
        .map(|p| {
            let t = fs::read_to_string(&p).expect("a source file");
            (p, t)
        })
        .collect();
    let mut test_files = BTreeSet::new();
    let codes: Vec<(&PathBuf, &str)> = texts
        .iter()
        .map(|(p, t)| (p, library_code(t, &mut test_files)))
        .collect();
    let mut wrong = Vec::new();
    let mut modules = BTreeSet::new();
    for (path, code) in codes {
        let rel = path.strip_prefix(&src).expect("under src");
        let file = rel.file_name().and_then(|f| f.to_str()).unwrap_or("");
        if rel == Path::new("lib.rs") || test_files.contains(file) {
            continue;
        }
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .map(|s| s.trim_end_matches(".rs").to_owned())
            .unwrap_or_default();
        let Some(&own) = layers.get(&top) else {
            wrong.push(format!("{}: module {top} is in no layer", rel.display()));
            continue;
        };
        modules.insert(top.clone());
        for m in named_modules(code, &roots) {
            if m == top {
                continue;
            }
            match layers.get(&m) {
                Some(&l) if l < own => {}
                Some(&l) => wrong.push(format!(
                    "{}: {top} (layer {own}) uses {m} (layer {l})",
                    rel.display()
                )),
                // Not a module of this crate (`crate::` in a string).
                None => {}
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "uses against the layers:\n{}",
        wrong.join("\n")
    );
    // The list names no module that is gone.
    for m in layers.keys() {
        assert!(
            modules.contains(m),
            "the layer list names {m}, which has no file"
        );
    }
}
