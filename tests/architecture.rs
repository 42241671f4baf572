//! The floor plan, checked: what `docs/architecture.md` promises about the
//! shape of the code, as tests, so a change that breaks it fails CI instead
//! of quietly making the document false.
//!
//! - no two source files import each other (a file-level import circle
//!   means two concerns that cannot be read, tested or moved apart);
//! - `redfence-history` depends on no crate of ours, and `redfence-reports`
//!   on `redfence-history` alone (reports render; they run nothing);
//! - nothing in the repository points at files outside it.
//!
//! The import scan reads `crate::…` and `super::…` paths in each crate's
//! `src/` (test modules after `#[cfg(test)]` and comments excluded) and
//! resolves each to the longest module path that is a file. A parent
//! module's own `mod child;` and `use child::…` are the module tree itself
//! and are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// Crate source roots of the workspace, relative to the repository root.
const SOURCE_ROOTS: [&str; 7] = [
    "history/src",
    "core/src",
    "sim/src",
    "chaos/src",
    "scenarios/src",
    "reports/src",
    "src",
];

/// Most files one walk may visit (a bound on the scan, far above the tree).
const FILES_MAX: usize = 10_000;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Files below `dir` whose name ends with one of `suffixes`, skipping
/// `target/` and hidden directories other than `.ci`.
fn walk(dir: &Path, suffixes: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        assert!(out.len() < FILES_MAX, "more than {FILES_MAX} files");
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if path.is_dir() {
            if name == "target" || (name.starts_with('.') && name != ".ci") {
                continue;
            }
            walk(&path, suffixes, out);
        } else if suffixes.iter().any(|s| name.ends_with(s)) {
            out.push(path);
        }
    }
}

/// The module path of `file` below `root` (`a/b.rs` and `a/b/mod.rs` are
/// both `[a, b]`; `lib.rs` and `main.rs` are `[]`).
fn module_path(root: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(root).expect("file below its root");
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// The code of a source file without its test module and line comments.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` refers to through `crate::` and `super::`,
/// seen from module `me`.
fn references(code: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let bytes = code.as_bytes();
    let mut refs = BTreeSet::new();
    let mut at = 0;
    // Bounded: every turn moves `at` forward.
    while at < bytes.len() {
        let rest = &code[at..];
        let boundary = at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
        let (base, consumed) = if boundary && rest.starts_with("crate::") {
            (Vec::new(), "crate::".len())
        } else if boundary && rest.starts_with("super::") {
            let mut ups = 0;
            let mut len = 0;
            while code[at + len..].starts_with("super::") {
                ups += 1;
                len += "super::".len();
            }
            (me[..me.len().saturating_sub(ups)].to_vec(), len)
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        let mut path = base;
        let tail = &code[at + consumed..];
        for segment in tail.split("::") {
            let name: String = segment
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
                break;
            }
            let whole = name.len() == segment.len();
            path.push(name);
            if !whole {
                break;
            }
        }
        refs.insert(path);
        at += consumed;
    }
    refs
}

/// Every file-level import edge (from, to) of the workspace.
fn import_edges() -> BTreeSet<(PathBuf, PathBuf)> {
    let mut edges = BTreeSet::new();
    for root in SOURCE_ROOTS {
        let root = repo().join(root);
        let mut files = Vec::new();
        walk(&root, &[".rs"], &mut files);
        assert!(!files.is_empty(), "no sources in {}", root.display());
        let modules: BTreeMap<Vec<String>, PathBuf> = files
            .iter()
            .map(|f| (module_path(&root, f), f.clone()))
            .collect();
        for file in &files {
            let me = module_path(&root, file);
            let code = code_of(&fs::read_to_string(file).expect("readable source"));
            for reference in references(&code, &me) {
                // The longest prefix of the path that is a module file.
                let target = (0..=reference.len())
                    .rev()
                    .find_map(|n| modules.get(&reference[..n]));
                if let Some(target) = target {
                    if target != file {
                        edges.insert((file.clone(), target.clone()));
                    }
                }
            }
        }
    }
    edges
}

/// Pairs of files that import each other, as `a <-> b` with `a < b`.
fn circles(edges: &BTreeSet<(PathBuf, PathBuf)>) -> Vec<String> {
    edges
        .iter()
        .filter(|(a, b)| a < b && edges.contains(&(b.clone(), a.clone())))
        .map(|(a, b)| {
            format!(
                "{} <-> {}",
                a.strip_prefix(repo()).unwrap_or(a).display(),
                b.strip_prefix(repo()).unwrap_or(b).display()
            )
        })
        .collect()
}

#[test]
fn no_two_files_import_each_other() {
    let edges = import_edges();
    assert!(
        edges.len() > 100,
        "the scan found only {} edges",
        edges.len()
    );
    let circles = circles(&edges);
    assert!(circles.is_empty(), "import circles: {circles:#?}");
}

#[test]
fn the_scan_resolves_paths_and_sees_a_circle_when_there_is_one() {
    let path = |parts: &[&str]| parts.iter().map(|p| (*p).to_owned()).collect::<Vec<_>>();
    let keys = path(&["redis", "cmd", "keys"]);
    let refs = references(
        &code_of("use super::super::frame::Frame; // crate::not::this"),
        &keys,
    );
    assert_eq!(refs, BTreeSet::from([path(&["redis", "frame"])]));
    let refs = references(
        "use super::exec::Exec;\nlet x = crate::history::FenceRecord::new();",
        &path(&["redis", "server"]),
    );
    assert!(refs.contains(&path(&["redis", "exec"])), "{refs:?}");
    assert!(refs.contains(&path(&["history"])), "{refs:?}");
    let a = repo().join("a.rs");
    let b = repo().join("b.rs");
    let c = repo().join("c.rs");
    let edges = BTreeSet::from([(a.clone(), b.clone()), (b.clone(), c.clone())]);
    assert!(circles(&edges).is_empty());
    let edges = BTreeSet::from([(a.clone(), b.clone()), (b, a)]);
    assert_eq!(circles(&edges), ["a.rs <-> b.rs"]);
}

/// The names of our crates a manifest lists under `[dependencies]`.
fn our_normal_dependencies(manifest: &str) -> BTreeSet<String> {
    let text = fs::read_to_string(repo().join(manifest)).expect("manifest");
    let mut in_deps = false;
    let mut ours = BTreeSet::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps && line.starts_with("redfence-") {
            let name: String = line
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            ours.insert(name);
        }
    }
    ours
}

#[test]
fn history_depends_on_nothing_of_ours_and_reports_on_history_alone() {
    assert_eq!(
        our_normal_dependencies("history/Cargo.toml"),
        BTreeSet::new()
    );
    assert_eq!(
        our_normal_dependencies("reports/Cargo.toml"),
        BTreeSet::from(["redfence-history".to_owned()])
    );
    // The scan reads real manifests: scenarios does depend on ours.
    assert!(our_normal_dependencies("scenarios/Cargo.toml").contains("redfence-history"));
}

#[test]
fn nothing_refers_to_files_outside_the_repository() {
    // Spelled in pieces so this file does not match itself.
    let outside = [
        format!("..{}shared", '/'),
        format!("DESIGN{}md", '.'),
        format!("FIELD-NOTES{}md", '.'),
    ];
    let mut files = Vec::new();
    walk(
        &repo(),
        &[
            ".rs",
            ".md",
            ".toml",
            ".json",
            ".sh",
            ".lua",
            ".sql",
            "justfile",
            "run",
            "test",
            "with-services",
            "images",
        ],
        &mut files,
    );
    assert!(
        files.len() > 50,
        "the walk found only {} files",
        files.len()
    );
    let mut hits = Vec::new();
    for file in files {
        let Ok(text) = fs::read_to_string(&file) else {
            continue;
        };
        for needle in &outside {
            if text.contains(needle.as_str()) {
                hits.push(format!("{}: {needle}", file.display()));
            }
        }
    }
    assert!(
        hits.is_empty(),
        "references outside the repository: {hits:#?}"
    );
}
