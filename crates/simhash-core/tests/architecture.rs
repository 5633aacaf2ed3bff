//! ARCHITECTURE.md's code map stays true: it lists every module of the
//! core (`crates/simhash-core/src`) and of the glue (`src/`), and every
//! module it lists exists.
//!
//! A module is listed by an item of the code map's section of its crate
//! whose head (the text before its first colon) names the file in
//! backquotes: `- `near.rs`: ...`. An item indented under `- `fingerprint/``
//! names a file of that folder; `fingerprint/v1.rs`, `v2.rs` in one head
//! name two files of it.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("the core lives in crates/simhash-core")
}

/// The `.rs` files below `dir`, as paths relative to it.
fn files(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).expect("a readable folder") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(dir).expect("below the folder");
                out.insert(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out
}

/// The files the code map's section headed `heading` lists.
fn listed(architecture: &str, heading: &str) -> BTreeSet<String> {
    let section = architecture
        .split("\n### ")
        .find(|s| s.starts_with(heading))
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no section {heading}"));
    let mut out = BTreeSet::new();
    let mut folder = String::new();
    for line in section.lines() {
        let trimmed = line.trim_start();
        let Some(item) = trimmed.strip_prefix("- ") else {
            continue;
        };
        let indented = line.len() > trimmed.len();
        if !indented {
            folder.clear();
        }
        let head = item.split(':').next().unwrap_or("");
        let names: Vec<&str> = head
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| n.ends_with(".rs") || n.ends_with('/'))
            .collect();
        let mut dir = if indented {
            folder.clone()
        } else {
            String::new()
        };
        for name in names {
            if let Some(sub) = name.strip_suffix('/') {
                if !indented {
                    folder = format!("{sub}/");
                }
                continue;
            }
            match name.rsplit_once('/') {
                Some((d, _)) => {
                    dir = format!("{d}/");
                    out.insert(name.to_owned());
                }
                None => {
                    out.insert(format!("{dir}{name}"));
                }
            }
        }
    }
    out
}

fn check(heading: &str, folder: &Path) {
    let text = fs::read_to_string(repository().join("ARCHITECTURE.md"))
        .expect("ARCHITECTURE.md is readable");
    let named = listed(&text, heading);
    let present = files(folder);
    let missing: Vec<_> = present.difference(&named).collect();
    let gone: Vec<_> = named.difference(&present).collect();
    assert!(
        missing.is_empty() && gone.is_empty(),
        "ARCHITECTURE.md, {heading}: modules not listed: {missing:?}; listed but gone: {gone:?}"
    );
}

#[test]
fn the_code_map_lists_every_module_of_the_core() {
    check(
        "`crates/simhash-core/src`",
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
    );
}

#[test]
fn the_code_map_lists_every_module_of_the_glue() {
    check("`src/`", &repository().join("src"));
}
