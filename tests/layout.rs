//! The code's shape, as issue 17 set it: no file imports a file that imports it back (nor any
//! longer loop, nor loops between a crate's top-level modules), and no library returns
//! `Result<_, String>`. Reads the source tree; runs no binary.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LIBRARIES: [&str; 9] = [
    "datasets/src",
    "probe/src",
    "collect/src",
    "collect/api/src",
    "classify/src",
    "reports/src",
    "audit/src",
    "pack/src",
    "cli/src",
];

/// The binary runs commands: their arguments in (clap types in `hspi-cli`, as uv keeps them in
/// uv-cli), the libraries called, the outcome printed and mapped to an exit code. The work
/// lives in the libraries. (About 45 lines per command: 21 commands.)
const BINARY_MAX_LINES: usize = 1000;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path inside its crate (`store::reader`; `` for lib.rs / main.rs).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    if matches!(
        parts.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        parts.pop();
    }
    parts
}

/// Paths a file of module `here` names (`crate::…`, `super::…`, brace groups expanded), as
/// module segments: `super` is `here`'s parent, whether the file is `gpu.rs` or `mod.rs`.
fn named_paths(text: &str, here: &[String]) -> Vec<Vec<String>> {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for start in ["crate::", "super::"] {
        let mut i = 0;
        while let Some(k) = code[i..].find(start) {
            let at = i + k;
            i = at + start.len();
            let before = code[..at].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            let rest = &code[at..];
            let end = rest
                .find(|c: char| {
                    !(c.is_alphanumeric()
                        || c == '_'
                        || c == ':'
                        || c == '{'
                        || c == '}'
                        || c == ','
                        || c == ' '
                        || c == '\n'
                        || c == '*')
                })
                .unwrap_or(rest.len());
            for p in expand(&rest[..end]) {
                let mut segs: Vec<&str> = p.split("::").filter(|s| !s.is_empty()).collect();
                let mut base: Vec<String> = here.to_vec();
                match segs.first() {
                    Some(&"crate") => {
                        base.clear();
                        segs.remove(0);
                    }
                    _ => {
                        while segs.first() == Some(&"super") {
                            segs.remove(0);
                            base.pop();
                        }
                    }
                }
                base.extend(segs.iter().map(|s| s.to_string()));
                out.push(base);
            }
        }
    }
    out
}

/// `a::{b, c::{d, e}}` → `a::b`, `a::c::d`, `a::c::e` (only as far as the group closes).
fn expand(s: &str) -> Vec<String> {
    let s = s.trim();
    let Some(open) = s.find('{') else {
        return vec![s
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches(',')
            .to_string()];
    };
    let prefix = &s[..open];
    let mut depth = 0;
    let mut close = s.len();
    for (i, c) in s[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    close = open + i;
                    break;
                }
            }
            _ => {}
        }
    }
    let inner = &s[open + 1..close.min(s.len())];
    let mut parts = Vec::new();
    let (mut depth, mut last) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[last..i]);
                last = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[last..]);
    parts
        .into_iter()
        .filter(|p| !p.trim().is_empty())
        .flat_map(|p| expand(p.trim()))
        .map(|p| format!("{prefix}{p}"))
        .collect()
}

/// The file a path names: the deepest module it reaches, following one `pub use child::…`
/// re-export of the item it ends in.
fn resolve(path: &[String], modules: &BTreeMap<Vec<String>, PathBuf>) -> Option<PathBuf> {
    let mut n = path.len();
    while n > 0 && !modules.contains_key(&path[..n]) {
        n -= 1;
    }
    let file = modules.get(&path[..n])?;
    if let Some(item) = path.get(n) {
        let text = std::fs::read_to_string(file).unwrap();
        for line in text
            .lines()
            .filter(|l| l.trim_start().starts_with("pub use "))
        {
            let body = line
                .trim_start()
                .trim_start_matches("pub use ")
                .trim_end_matches(';');
            for p in expand(body) {
                let segs: Vec<&str> = p.split("::").collect();
                if segs.last() == Some(&item.as_str()) && segs.len() >= 2 {
                    let mut child = path[..n].to_vec();
                    child.push(segs[0].to_string());
                    if let Some(f) = modules.get(&child) {
                        return Some(f.clone());
                    }
                }
            }
        }
    }
    Some(file.clone())
}

/// Tarjan's state: next index, (index, lowlink) per node, the stack, its members, components.
type Tarjan<N> = (
    usize,
    BTreeMap<N, (usize, usize)>,
    Vec<N>,
    BTreeSet<N>,
    Vec<Vec<N>>,
);

/// Strongly connected components with more than one member (Tarjan).
fn cycles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    fn visit<N: Ord + Clone>(v: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut Tarjan<N>) {
        let i = s.0;
        s.0 += 1;
        s.1.insert(v.clone(), (i, i));
        s.2.push(v.clone());
        s.3.insert(v.clone());
        for w in edges.get(v).into_iter().flatten() {
            if !s.1.contains_key(w) {
                visit(w, edges, s);
                let low = s.1[w].1.min(s.1[v].1);
                s.1.get_mut(v).unwrap().1 = low;
            } else if s.3.contains(w) {
                let low = s.1[w].0.min(s.1[v].1);
                s.1.get_mut(v).unwrap().1 = low;
            }
        }
        if s.1[v].0 == s.1[v].1 {
            let mut comp = Vec::new();
            while let Some(w) = s.2.pop() {
                s.3.remove(&w);
                comp.push(w.clone());
                if &w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                s.4.push(comp);
            }
        }
    }
    let mut state = (0, BTreeMap::new(), Vec::new(), BTreeSet::new(), Vec::new());
    for v in edges.keys() {
        if !state.1.contains_key(v) {
            visit(v, edges, &mut state);
        }
    }
    state.4
}

/// Which file imports which (a module and its own submodules are one unit: parents declare
/// and re-export), and which of the crate's top-level modules imports which.
type ImportGraph = (
    BTreeMap<PathBuf, BTreeSet<PathBuf>>,
    BTreeMap<String, BTreeSet<String>>,
);

fn import_graph(src: &Path) -> ImportGraph {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files
        .iter()
        .map(|f| (module_of(src, f), f.clone()))
        .collect();
    let mut file_edges: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut top_edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let here = module_of(src, f);
        let text = std::fs::read_to_string(f).unwrap();
        for path in named_paths(&text, &here) {
            let Some(target) = resolve(&path, &modules) else {
                continue;
            };
            let there = module_of(src, &target);
            // A module and its own submodules are one unit: parents declare and re-export.
            if here.starts_with(&there) || there.starts_with(&here) {
                continue;
            }
            file_edges
                .entry(f.clone())
                .or_default()
                .insert(target.clone());
            if let (Some(a), Some(b)) = (here.first(), there.first()) {
                if a != b {
                    top_edges.entry(a.clone()).or_default().insert(b.clone());
                }
            }
        }
    }
    (file_edges, top_edges)
}

fn import_loops(src: &Path) -> Vec<String> {
    let (file_edges, top_edges) = import_graph(src);
    let rel = |p: &PathBuf| p.strip_prefix(root()).unwrap().display().to_string();
    let mut found: Vec<String> = cycles(&file_edges)
        .into_iter()
        .map(|c| c.iter().map(rel).collect::<Vec<_>>().join(" <-> "))
        .collect();
    found.extend(
        cycles(&top_edges)
            .into_iter()
            .map(|c| format!("{}: modules {}", src.display(), c.join(" <-> "))),
    );
    found
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let mut found = Vec::new();
    for dir in LIBRARIES.iter().chain(&["src"]) {
        found.extend(import_loops(&root().join(dir)));
    }
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_planted_loops() {
    let write = |dir: &Path, files: &[(&str, &str)]| {
        for (name, text) in files {
            let path = dir.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    };
    // Through `crate::`.
    let by_crate = tempfile::tempdir().unwrap();
    write(
        by_crate.path(),
        &[
            ("lib.rs", "mod a;\nmod b;\n"),
            ("a.rs", "use crate::b::B;\npub struct A;\n"),
            ("b.rs", "use crate::a::A;\npub struct B;\n"),
        ],
    );
    assert_eq!(cycles(&import_graph(by_crate.path()).0).len(), 1);
    // Through `super::` between two files of one module (`gpu.rs` and `plan.rs` under
    // `backend/emulated/`): `super` is their module, not its parent.
    let by_super = tempfile::tempdir().unwrap();
    write(
        by_super.path(),
        &[
            ("lib.rs", "mod backend;\n"),
            ("backend/mod.rs", "mod emulated;\n"),
            ("backend/emulated/mod.rs", "mod gpu;\nmod plan;\n"),
            (
                "backend/emulated/gpu.rs",
                "use super::plan::Plan;\npub struct Shape;\n",
            ),
            (
                "backend/emulated/plan.rs",
                "use super::gpu::Shape;\npub struct Plan;\n",
            ),
        ],
    );
    let loops = cycles(&import_graph(by_super.path()).0);
    assert_eq!(loops.len(), 1, "{loops:?}");
    assert!(loops[0].iter().any(|f| f.ends_with("gpu.rs")));
    // `super::super::` from a file reaches its module's parent.
    assert_eq!(
        named_paths(
            "use super::super::x::Y;",
            &["a".into(), "b".into(), "c".into()]
        ),
        vec![vec!["a".to_string(), "x".into(), "Y".into()]]
    );
}

#[test]
fn the_binary_is_glue() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let lines: usize = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap().lines().count())
        .sum();
    assert!(
        lines <= BINARY_MAX_LINES,
        "src/ has {lines} lines (at most {BINARY_MAX_LINES}): move library logic into the crates"
    );
}

#[test]
fn no_library_returns_a_string_error() {
    let mut found = Vec::new();
    for dir in LIBRARIES {
        let mut files = Vec::new();
        rust_files(&root().join(dir), &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                let l = line.replace(' ', "");
                let string_err = (l.contains("Result<") && l.contains(",String>"))
                    || l.contains("typeErr=String;");
                if string_err && !l.starts_with("//") {
                    found.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "Result<_, String> in a library:\n{}",
        found.join("\n")
    );
}
