//! The floor plan, checked: what `docs/architecture.md` promises about the
//! shape of the code, as tests, so a change that breaks it fails CI instead
//! of quietly making the document false.
//!
//! - no source files import each other in a circle, of any length, apart
//!   from a module file and its own children (a file-level import circle
//!   means two concerns that cannot be read, tested or moved apart);
//! - `redfence-history` depends on no crate of ours, and `redfence-reports`
//!   on `redfence-history` alone (reports render; they run nothing);
//! - nothing in the repository points at files outside it.
//!
//! The import scan reads the `crate::…` and `super::…` paths in each
//! crate's `src/` (grouped imports item by item) and a module's references
//! to its own children (`child::item`), with test modules after
//! `#[cfg(test)]` and comments left out, and resolves each to the longest
//! module path that is a file. A module file and its own children share
//! helpers both ways by design; every other circle fails. A path that goes
//! through a re-export is credited to the module that re-exports it, not to
//! the file that defines the item: a circle hidden behind a `pub use` is not
//! seen.

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
        if path.is_symlink() {
            continue; // a link may loop; the tree has none of its own
        }
        if path.is_dir() {
            if name == "target" || name == ".git" {
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

/// The code of a source file without its test module (a `#[cfg(test)]`
/// `mod`, by convention last in the file) and line comments.
fn code_of(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod ").next().unwrap_or("");
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Splits `a, b::{c, d}, e` at the commas that are not inside braces.
fn split_top_level(list: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0_usize, 0);
    for (i, c) in list.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(list[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(list[start..].trim());
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

/// The module paths one path expression names: `a::b::{c, d::e}` is
/// `[a, b, c]` and `[a, b, d, e]`; a path stops at its first segment that is
/// not a lower-case name (a type, a constant, `self`, a glob).
fn expand(prefix: &[String], text: &str, out: &mut BTreeSet<Vec<String>>) {
    let mut path = prefix.to_vec();
    let mut rest = text;
    // Bounded: every turn consumes a segment of `rest`.
    loop {
        if let Some(group) = rest.strip_prefix('{') {
            let inner = group.rsplit_once('}').map_or(group, |(inner, _)| inner);
            for part in split_top_level(inner) {
                expand(&path, part, out);
            }
            return;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() || name == "self" || !name.starts_with(|c: char| c.is_ascii_lowercase())
        {
            break;
        }
        rest = &rest[name.len()..];
        path.push(name);
        match rest.strip_prefix("::") {
            Some(next) => rest = next,
            None => break,
        }
    }
    out.insert(path);
}

/// The module paths `code` refers to through `crate::`, `super::` and the
/// names of its own child modules (`mod child;` … `child::item`), seen from
/// module `me`; grouped imports (`use super::{a, b::c}`) name each module
/// they list.
fn references(code: &str, me: &[String]) -> BTreeSet<Vec<String>> {
    let bytes = code.as_bytes();
    let children: Vec<String> = code
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|p| line.strip_prefix(p))
                .unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.trim().to_owned())
        })
        .collect();
    let mut refs = BTreeSet::new();
    let mut at = 0;
    // Bounded: every turn moves `at` forward.
    while at < bytes.len() {
        let rest = &code[at..];
        let boundary = at == 0
            || !(bytes[at - 1].is_ascii_alphanumeric()
                || bytes[at - 1] == b'_'
                || bytes[at - 1] == b':');
        let (base, skip) = if !boundary {
            (None, 0)
        } else if rest.starts_with("crate::") {
            (Some(Vec::new()), "crate::".len())
        } else if rest.starts_with("super::") {
            let mut ups = 0;
            let mut len = 0;
            while code[at + len..].starts_with("super::") {
                ups += 1;
                len += "super::".len();
            }
            (Some(me[..me.len().saturating_sub(ups)].to_vec()), len)
        } else if children
            .iter()
            .any(|c| rest.starts_with(c.as_str()) && rest[c.len()..].starts_with("::"))
        {
            (Some(me.to_vec()), 0)
        } else {
            (None, 0)
        };
        let Some(base) = base else {
            at += rest.chars().next().map_or(1, char::len_utf8);
            continue;
        };
        // The path text: names and `::`, and a `{…}` group taken whole.
        let text = &code[at + skip..];
        let mut end = 0;
        let mut depth = 0_usize;
        for (i, c) in text.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth > 0 => depth -= 1,
                c if depth > 0 || c.is_ascii_alphanumeric() || c == '_' || c == ':' => {}
                _ => break,
            }
            end = i + c.len_utf8();
            if depth == 0 && c == '}' {
                break;
            }
        }
        expand(&base, &text[..end], &mut refs);
        at += skip.max(1);
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

/// Whether `parent` is the module file (`mod.rs`, `lib.rs`, `main.rs`)
/// that declares `child`: a module and its own children share helpers both
/// ways by design (the children's common code lives in `mod.rs`), so that
/// pair is the module tree, not a circle.
fn declares(parent: &Path, child: &Path) -> bool {
    let is_module_file = matches!(
        parent.file_name().and_then(|n| n.to_str()),
        Some("mod.rs" | "lib.rs" | "main.rs")
    );
    let child_dir = if child.file_name().and_then(|n| n.to_str()) == Some("mod.rs") {
        child.parent().and_then(Path::parent)
    } else {
        child.parent()
    };
    is_module_file && parent != child && child_dir == parent.parent()
}

/// The import circles among `edges`, of any length, leaving out a module's
/// edges to and from its own children: each circle as its files, sorted.
fn circles(edges: &BTreeSet<(PathBuf, PathBuf)>) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for (a, b) in edges {
        if !declares(a, b) && !declares(b, a) {
            next.entry(a).or_default().push(b);
        }
    }
    // What each file reaches (bounded by the number of files).
    let reach = |from: &PathBuf| -> BTreeSet<PathBuf> {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.clone()];
        while let Some(file) = stack.pop() {
            for to in next.get(&file).into_iter().flatten() {
                if seen.insert((*to).clone()) {
                    stack.push((*to).clone());
                }
            }
        }
        seen
    };
    let reached: BTreeMap<PathBuf, BTreeSet<PathBuf>> =
        next.keys().map(|f| ((*f).clone(), reach(f))).collect();
    let mut found: BTreeSet<Vec<String>> = BTreeSet::new();
    for (file, reaches) in &reached {
        if !reaches.contains(file) {
            continue;
        }
        let circle: Vec<String> = reaches
            .iter()
            .filter(|other| reached.get(*other).is_some_and(|r| r.contains(file)))
            .map(|f| f.strip_prefix(repo()).unwrap_or(f).display().to_string())
            .collect();
        found.insert(circle);
    }
    found.into_iter().collect()
}

#[test]
fn no_files_import_each_other_in_a_circle() {
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
    // Grouped imports name every module they list, nested groups included.
    let refs = references(
        "use super::{\n    holdings::holdings,\n    lookup::{self, find},\n    more,\n};",
        &path(&["checker", "fail_closed"]),
    );
    assert!(
        refs.contains(&path(&["checker", "holdings", "holdings"])),
        "{refs:?}"
    );
    assert!(
        refs.contains(&path(&["checker", "lookup", "find"])),
        "{refs:?}"
    );
    assert!(refs.contains(&path(&["checker", "more"])), "{refs:?}");
    // A module's own children, named without `self::`.
    let refs = references(
        "mod keys;\nfn f() { keys::get(); }",
        &path(&["redis", "cmd"]),
    );
    assert!(
        refs.contains(&path(&["redis", "cmd", "keys", "get"])),
        "{refs:?}"
    );

    let file = |name: &str| repo().join(name);
    let (a, b, c) = (file("x/a.rs"), file("x/b.rs"), file("x/c.rs"));
    let line = BTreeSet::from([(a.clone(), b.clone()), (b.clone(), c.clone())]);
    assert!(circles(&line).is_empty());
    let three = BTreeSet::from([
        (a.clone(), b.clone()),
        (b.clone(), c.clone()),
        (c.clone(), a.clone()),
    ]);
    assert_eq!(circles(&three), [vec!["x/a.rs", "x/b.rs", "x/c.rs"]]);
    // A module file and its own child may share helpers both ways.
    let module = file("x/mod.rs");
    let tree = BTreeSet::from([(module.clone(), a.clone()), (a, module)]);
    assert!(circles(&tree).is_empty());
}

/// The names of our crates that `package` depends on normally (not as a
/// dev- or build-dependency), as `cargo metadata` reads the manifests.
fn our_normal_dependencies(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(output.status.success(), "cargo metadata failed");
    let metadata: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("cargo metadata prints JSON");
    let packages = metadata["packages"].as_array().expect("packages");
    let found = packages
        .iter()
        .find(|p| p["name"] == package)
        .unwrap_or_else(|| panic!("no package {package}"));
    found["dependencies"]
        .as_array()
        .expect("dependencies")
        .iter()
        .filter(|d| d["kind"].is_null())
        .filter_map(|d| d["name"].as_str())
        .filter(|name| name.starts_with("redfence-"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn history_depends_on_nothing_of_ours_and_reports_on_history_alone() {
    assert_eq!(our_normal_dependencies("redfence-history"), BTreeSet::new());
    assert_eq!(
        our_normal_dependencies("redfence-reports"),
        BTreeSet::from(["redfence-history".to_owned()])
    );
    // The scan reads real manifests: scenarios does depend on ours.
    assert!(our_normal_dependencies("redfence-scenarios").contains("redfence-history"));
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
