//! The README and every page of the guide (docs/) teach commands that exist: each `hspi …` (or
//! `cargo run --release -- …`) command in their shell blocks names a real subcommand and only
//! options that subcommand's `--help` lists, and every docs page starts from such a command.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The pages: the README and docs/*.md.
fn pages() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    pages.insert(0, root.join("README.md"));
    pages
}

/// The hspi commands of a page's ```sh blocks, continuation lines joined, comments dropped, the
/// arguments after `hspi`.
fn commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_block = false;
    let mut pending = String::new();
    for line in text.lines() {
        if line.starts_with("```") {
            in_block = line.trim() == "```sh";
            continue;
        }
        if !in_block {
            continue;
        }
        let line = line.split(" # ").next().unwrap().trim_end();
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let full = std::mem::take(&mut pending);
        let full = full.trim();
        for prefix in ["hspi ", "cargo run --release -- "] {
            if let Some(args) = full.strip_prefix(prefix) {
                out.push(args.to_string());
            }
        }
    }
    out
}

/// The subcommand path of `args` and the help text it prints.
fn subcommand(args: &[&str]) -> (Vec<String>, String) {
    let words: Vec<&str> = args
        .iter()
        .take_while(|a| !a.starts_with('-'))
        .copied()
        .collect();
    for n in (1..=words.len().min(2)).rev() {
        let mut call: Vec<&str> = words[..n].to_vec();
        call.push("--help");
        let r = run(&call);
        if r.code == 0
            && r.stdout
                .contains(&format!("Usage: hspi {}", words[..n].join(" ")))
        {
            return (words[..n].iter().map(|w| w.to_string()).collect(), r.stdout);
        }
    }
    let r = run(&["--help"]);
    (Vec::new(), r.stdout)
}

#[test]
fn every_command_in_the_readme_and_the_guide_exists_with_its_options() {
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let found = commands(&text);
        if name != "README.md" {
            assert!(
                !found.is_empty(),
                "{name} starts from no hspi command in a ```sh block"
            );
        }
        for args in found {
            let words: Vec<&str> = args.split_whitespace().collect();
            let (path, help) = subcommand(&words);
            assert!(
                !path.is_empty() || words[0].starts_with('-'),
                "{name}: `hspi {args}`: no such command"
            );
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                let flag = flag.split('=').next().unwrap();
                assert!(
                    help.contains(&format!("{flag} ")) || help.contains(&format!("{flag}\n")),
                    "{name}: `hspi {args}`: hspi {} has no {flag}",
                    path.join(" ")
                );
            }
            checked += 1;
        }
    }
    assert!(checked >= 20, "only {checked} commands found");
    eprintln!("{checked} commands checked");
}

#[test]
fn the_readme_stays_short() {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let lines = text.lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: move detail into docs/"
    );
    for needed in [
        "cargo run --release -- demo",
        ".ci/setup && cargo test --release --workspace --no-fail-fast",
        "cargo install --path .",
    ] {
        assert!(text.contains(needed), "README.md lacks `{needed}`");
    }
}
