//! The core's modules import each other in one direction: no cycle.
//!
//! Reads `src/**/*.rs` and takes, at module granularity (the top-level
//! modules, and the fingerprint's submodules), every path that names
//! another module: `crate::a::b`, `super::x`, `self::x`, and a child
//! module named by its parent (`dense::` in `fingerprint.rs`). Comments,
//! strings and `#[cfg(test)]` items are left out: a test may check a
//! module against one above it. A cycle fails the test, printed.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;

/// A module: its path below the crate, as `fingerprint/dense`.
type Node = String;

/// Every module of `src` (by path below the crate) and its source.
fn modules() -> BTreeMap<Node, String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    let mut dirs = vec![src.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).expect("src is readable") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path.strip_prefix(&src).expect("below src");
                let name = rel.with_extension("").to_string_lossy().replace('\\', "/");
                let name = name.strip_suffix("/mod").unwrap_or(&name).to_owned();
                out.insert(name, fs::read_to_string(&path).expect("readable"));
            }
        }
    }
    out
}

/// `text` without comments, string and character literals (each replaced
/// by a space), so that only code is left.
fn code_only(text: &str) -> String {
    let b: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && matches!(next, Some('"') | Some('#')) && !ident_before(&b, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
            out.push(' ');
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push(' ');
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime.
            let end = if next == Some('\\') {
                (i + 2..b.len()).find(|&j| b[j] == '\'')
            } else if b.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(e) => {
                    i = e + 1;
                    out.push(' ');
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// `code` without the items marked `#[cfg(test)]`: from the attribute to
/// the end of the item's braces, or its `;`.
fn without_tests(code: &str) -> String {
    let mut out = String::new();
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let mut depth = 0;
        let mut end = item.len();
        for (k, ch) in item.char_indices().skip("#[cfg(test)]".len()) {
            match ch {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// The paths of `code`, each as its segments: every run of identifiers
/// joined by `::`, with a `{...}` group after a `::` giving one path for
/// each of its members (nested groups too).
fn paths(code: &str) -> Vec<Vec<String>> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let starts = is_ident(&tokens[i]) && (i == 0 || tokens[i - 1] != "::");
        if starts {
            i = path_at(&tokens, i, Vec::new(), &mut out);
        } else {
            i += 1;
        }
    }
    out
}

/// Reads the path starting at `tokens[i]` after `prefix`, into `out`;
/// returns the index after it.
fn path_at(
    tokens: &[String],
    mut i: usize,
    prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    let mut path = prefix;
    loop {
        if i < tokens.len() && is_ident(&tokens[i]) {
            path.push(tokens[i].clone());
            i += 1;
        } else if i < tokens.len() && tokens[i] == "{" {
            // A group: each member, up to the matching brace.
            i += 1;
            while i < tokens.len() && tokens[i] != "}" {
                if tokens[i] == "," {
                    i += 1;
                } else if is_ident(&tokens[i]) || tokens[i] == "{" {
                    i = path_at(tokens, i, path.clone(), out);
                } else {
                    i += 1;
                }
            }
            return i + 1;
        } else {
            break;
        }
        if i < tokens.len() && tokens[i] == "::" {
            i += 1;
        } else {
            break;
        }
    }
    if path.len() > 1 {
        out.push(path);
    }
    i
}

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation characters.
fn tokenize(code: &str) -> Vec<String> {
    let b: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            out.push(b[start..i].iter().collect());
        } else if c == ':' && b.get(i + 1) == Some(&':') {
            out.push("::".to_owned());
            i += 2;
        } else {
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// The module a path from module `from` names, if it names one other
/// than `from`: `crate::a::b` is `a/b` when that is a module, else `a`;
/// `super::`, `self::` and a child's name are resolved from `from`.
fn target(from: &str, path: &[String], nodes: &BTreeSet<Node>) -> Option<Node> {
    let here: Vec<&str> = if from == "lib" {
        Vec::new()
    } else {
        from.split('/').collect()
    };
    let (mut base, rest): (Vec<&str>, &[String]) = match path[0].as_str() {
        "crate" => (Vec::new(), &path[1..]),
        "self" => (here.clone(), &path[1..]),
        "super" => {
            let mut base = here.clone();
            let mut k = 0;
            while path.get(k).is_some_and(|s| s == "super") {
                base.pop();
                k += 1;
            }
            (base, &path[k..])
        }
        _ => (here.clone(), path),
    };
    // The deepest module the path goes through.
    let mut found: Option<Node> = (!base.is_empty()).then(|| base.join("/"));
    for seg in rest {
        base.push(seg);
        let name = base.join("/");
        if nodes.contains(&name) {
            found = Some(name);
        } else {
            break;
        }
    }
    // A bare path that names no module below `from` (`std::...`,
    // `Self::...`) ends at `from`: no edge.
    found.filter(|f| f != from)
}

/// Who imports whom.
fn graph() -> BTreeMap<Node, BTreeSet<Node>> {
    let modules = modules();
    let nodes: BTreeSet<Node> = modules.keys().cloned().collect();
    let mut graph = BTreeMap::new();
    for (name, text) in &modules {
        if name == "lib" {
            continue;
        }
        let code = without_tests(&code_only(text));
        let edges: BTreeSet<Node> = paths(&code)
            .iter()
            .filter_map(|p| target(name, p, &nodes))
            .collect();
        graph.insert(name.clone(), edges);
    }
    graph
}

/// A cycle of `graph`, if it has one: its modules in order, the first
/// again at the end.
fn cycle(graph: &BTreeMap<Node, BTreeSet<Node>>) -> Option<Vec<Node>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        Open,
        Done,
    }
    fn visit(
        n: &Node,
        graph: &BTreeMap<Node, BTreeSet<Node>>,
        marks: &mut BTreeMap<Node, Mark>,
        stack: &mut Vec<Node>,
    ) -> Option<Vec<Node>> {
        marks.insert(n.clone(), Mark::Open);
        stack.push(n.clone());
        for m in graph.get(n).into_iter().flatten() {
            match marks.get(m).copied().unwrap_or(Mark::New) {
                Mark::Open => {
                    let from = stack.iter().position(|s| s == m).expect("on the stack");
                    let mut c = stack[from..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Mark::New => {
                    if let Some(c) = visit(m, graph, marks, stack) {
                        return Some(c);
                    }
                }
                Mark::Done => {}
            }
        }
        stack.pop();
        marks.insert(n.clone(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for n in graph.keys() {
        if marks.get(n).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(c) = visit(n, graph, &mut marks, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn show(graph: &BTreeMap<Node, BTreeSet<Node>>) -> String {
    graph
        .iter()
        .map(|(n, to)| {
            format!(
                "{n} -> {}\n",
                to.iter().cloned().collect::<Vec<_>>().join(", ")
            )
        })
        .collect()
}

#[test]
fn the_modules_import_each_other_in_one_direction() {
    let graph = graph();
    if let Some(c) = cycle(&graph) {
        panic!("import cycle: {}\n\n{}", c.join(" -> "), show(&graph));
    }
    // Print with `cargo test --test module_graph -- --nocapture`.
    println!("{}", show(&graph));
}

#[test]
fn the_reader_finds_the_paths_that_make_a_cycle() {
    let nodes: BTreeSet<Node> = [
        "fingerprint",
        "fingerprint/dense",
        "fingerprint/scan",
        "weights",
    ]
    .map(String::from)
    .into();
    let edges = |from: &str, text: &str| -> BTreeSet<Node> {
        paths(&without_tests(&code_only(text)))
            .iter()
            .filter_map(|p| target(from, p, &nodes))
            .collect()
    };
    let set = |v: &[&str]| -> BTreeSet<Node> { v.iter().map(|s| s.to_string()).collect() };
    assert_eq!(
        edges("fingerprint/scan", "use super::dense::{a, b};"),
        set(&["fingerprint/dense"])
    );
    assert_eq!(
        edges("fingerprint/scan", "use super::{dense::A, Fingerprinter};"),
        set(&["fingerprint", "fingerprint/dense"])
    );
    assert_eq!(
        edges(
            "fingerprint/scan",
            "fn f() { crate::fingerprint::dense::g(); crate::weights::h(); }"
        ),
        set(&["fingerprint/dense", "weights"])
    );
    assert_eq!(
        edges("fingerprint", "fn f() { dense::g(); std::mem::swap(); }"),
        set(&["fingerprint/dense"])
    );
    assert_eq!(
        edges(
            "fingerprint/scan",
            "// use super::dense;\nconst S: &str = \"super::dense\";\nlet c = '\"';\n#[cfg(test)]\nmod tests { use super::super::dense; }"
        ),
        set(&[])
    );
    let mut g: BTreeMap<Node, BTreeSet<Node>> = BTreeMap::new();
    g.insert("a".into(), set(&["b"]));
    g.insert("b".into(), set(&["c"]));
    g.insert("c".into(), set(&[]));
    assert_eq!(cycle(&g), None);
    g.insert("c".into(), set(&["a"]));
    assert_eq!(
        cycle(&g),
        Some(["a", "b", "c", "a"].map(String::from).to_vec())
    );
}
