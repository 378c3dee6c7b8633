//! The README and every page of the guide (docs/) teach commands that exist: each `hspi …` (or
//! `cargo run --release -- …`) command in their shell blocks names a real subcommand and only
//! options that subcommand's `--help` lists, and every docs page starts from such a command.
//! Every exit code they state is the code's; every measured figure outside
//! docs/how-hspi-decides.md is a link to the passage there that states it (`common/figures.rs`).

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// The pages: the README and docs/*.md.
fn pages() -> Vec<PathBuf> {
    guide_pages()
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

/// The exit code a page states for `verdict`, from its tables (`| verdict | … | N | … |`) and
/// sentences (`"unknown platform" (exit 4)`): every one found, with where.
fn stated_exit_codes(verdict: &str) -> Vec<(String, u8)> {
    let mut found = Vec::new();
    for page in pages() {
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&page).unwrap();
        found.extend(exit_codes_in(&name, &text, verdict));
    }
    found
}

/// The exit codes `text` (the page `name`) states for `verdict`.
fn exit_codes_in(name: &str, text: &str, verdict: &str) -> Vec<(String, u8)> {
    let mut found = Vec::new();
    {
        // The column headed "exit" of the table being read, if it has one.
        let mut exit_column: Option<usize> = None;
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            if !line.starts_with('|') {
                exit_column = None;
            } else if lines
                .get(n + 1)
                .is_some_and(|next| next.starts_with("| ---") || next.starts_with("|---"))
            {
                exit_column = cells.iter().position(|c| *c == "exit");
            } else if let Some(col) = exit_column.filter(|_| cells.get(1) == Some(&verdict)) {
                if let Some(code) = cells.get(col).and_then(|c| c.parse::<u8>().ok()) {
                    found.push((format!("{name}:{}", n + 1), code));
                }
            }
            for quoted in [format!("\"{verdict}\" (exit "), format!("{verdict} (exit ")] {
                if let Some(at) = line.find(&quoted) {
                    let rest = &line[at + quoted.len()..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    if let Ok(code) = digits.parse() {
                        found.push((format!("{name}:{}", n + 1), code));
                    }
                }
            }
        }
    }
    found
}

#[test]
fn a_planted_wrong_exit_code_is_found() {
    let page = "| verdict | means | exit |\n| --- | --- | --- |\n| inconclusive | the budget ended | 1 |\n\n\
                `identify` says \"unknown platform\" (exit 2)\n| inconclusive | 200 | 3 |\n";
    assert_eq!(
        exit_codes_in("p", page, "inconclusive"),
        [("p:3".to_string(), 1)]
    );
    assert_eq!(
        exit_codes_in("p", page, "unknown platform"),
        [("p:5".to_string(), 2)]
    );
}

/// Every exit code the README and the guide state for a verdict is the one the code returns
/// (`Verdict::exit_code`, `ENDPOINT_DOWN_EXIT`; 2 for an error, decided in `src/main.rs`).
#[test]
fn every_exit_code_the_guide_states_is_the_codes() {
    use hspi_classify::verify::{Verdict, ENDPOINT_DOWN_EXIT};
    let why = || "r".to_string();
    let verdicts = [
        ("consistent", Verdict::Consistent.exit_code()),
        (
            "mismatch",
            Verdict::Mismatch {
                likely_class: String::new(),
                likely_platform: String::new(),
                dimensions: Vec::new(),
            }
            .exit_code(),
        ),
        ("tampered", Verdict::Tampered { reason: why() }.exit_code()),
        (
            "mixed",
            Verdict::Mixed {
                routes: Vec::new(),
                settled: 0,
                unsettled: 0,
            }
            .exit_code(),
        ),
        (
            "inconclusive",
            Verdict::Inconclusive { reason: why() }.exit_code(),
        ),
        (
            "unknown platform",
            Verdict::UnknownPlatform { reason: why() }.exit_code(),
        ),
        ("endpoint down", ENDPOINT_DOWN_EXIT),
        ("error", 2),
    ];
    let mut checked = 0;
    for (verdict, code) in verdicts {
        let stated = stated_exit_codes(verdict);
        for (place, says) in &stated {
            assert_eq!(
                *says, code,
                "{place}: \"{verdict}\" exits {code}, the page says {says}"
            );
        }
        checked += stated.len();
    }
    assert!(checked >= 7, "only {checked} stated exit codes found");
}

/// A command line's words as a shell splits them (single and double quotes; no expansion).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut any) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            (_, c) => {
                word.push(c);
                any = true;
            }
        }
    }
    if any {
        words.push(word);
    }
    words
}

/// Every command in the README and the guide parses with hspi's own argument parser, typed option
/// values included (a format, a claim word, a number the code does not take fails here: tried
/// with `--fresh-formats q8_1x`), and the values the parser keeps as text are the libraries': an
/// `--api` shape, `pack build --formats` router words (exact llama.cpp types are llama-quantize's
/// to refuse).
#[test]
fn every_command_in_the_guide_parses_with_its_values() {
    use clap::Parser;
    let mut failures = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page.file_name().unwrap().to_string_lossy().to_string();
        for args in commands(&text) {
            // Shell variables and placeholders the reader fills in are left as they are.
            let mut argv = vec!["hspi".to_string()];
            argv.extend(shell_words(&args).into_iter().filter(|w| w != "&"));
            if argv
                .iter()
                .any(|w| w.contains('$') || w.contains('…') || w == "|")
            {
                continue;
            }
            // Values the parser keeps as text and a library reads later.
            for pair in argv.windows(2) {
                let (flag, value) = (pair[0].as_str(), pair[1].as_str());
                let refused = match flag {
                    "--api" => hspi_api::shape_named(value).err().map(|e| e.to_string()),
                    "--formats" if argv.get(1).is_some_and(|w| w == "pack") => {
                        let words: Vec<String> = value.split(',').map(String::from).collect();
                        hspi_audit::check_formats(&words)
                            .err()
                            .map(|e| e.to_string())
                    }
                    _ => None,
                };
                if let Some(why) = refused {
                    failures.push(format!("{name}: `hspi {args}`: {flag} {value}: {why}"));
                }
            }
            match hspi_cli::Cli::try_parse_from(&argv) {
                Ok(_) => checked += 1,
                Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => checked += 1,
                Err(e) => failures.push(format!("{name}: `hspi {args}`: {}", e.kind())),
            }
        }
    }
    assert!(
        failures.is_empty(),
        "commands the parser refuses:\n{}",
        failures.join("\n")
    );
    assert!(checked >= 20, "only {checked} commands parsed");
    eprintln!("{checked} commands parsed");
}

/// The procurement page's sample report is a real audit's, and the page states what it says:
/// its verdict, answers and output tokens, and the exit code that verdict has; the report
/// renders again from its JSON; its answers weigh again to the same verdict with the pack.
#[test]
fn the_sample_report_is_what_the_procurement_page_says() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("docs/sample-report");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("audit.json")).unwrap()).unwrap();
    let page = std::fs::read_to_string(root.join("docs/procurement.md")).unwrap();
    let verdict = json["summary"]["verdict"].as_str().unwrap();
    let v = &json["evidence"]["verification"];
    let (queries, tokens) = (
        v["queries"].as_u64().unwrap(),
        v["output_tokens"].as_u64().unwrap(),
    );
    assert!(
        page.contains(&format!("It says **{verdict}**")),
        "the page's verdict"
    );
    assert!(
        page.contains(&format!("after {queries} answers ({tokens} output tokens")),
        "the page's figures: {queries} answers, {tokens} tokens"
    );
    let code = hspi_classify::verify::Verdict::Mismatch {
        likely_class: String::new(),
        likely_platform: String::new(),
        dimensions: Vec::new(),
    }
    .exit_code();
    assert_eq!(verdict, "mismatch");
    assert!(page.contains(&format!("The exit code was {code}.")));
    let out = tempfile::tempdir().unwrap();
    let md = out.path().join("again.md");
    ok(&[
        "report",
        "--from",
        dir.join("audit.json").to_str().unwrap(),
        "--format",
        "md",
        "--out",
        md.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read_to_string(&md).unwrap(),
        std::fs::read_to_string(dir.join("audit.md")).unwrap(),
        "audit.md is the JSON's rendering"
    );
    let r = verify_with_shipped_pack(&dir, "*/*/f16/*", &[]);
    assert_eq!(r.code, i32::from(code), "weighed again: {}", r.stderr);
}

/// Each measured figure in one place: every count over audits, tokens to a verdict, wall time and
/// date outside docs/how-hspi-decides.md is a link to the anchored passage there that says it
/// word for word (`common/figures.rs`).
#[test]
fn every_figure_outside_the_figures_page_is_a_link_saying_what_it_says() {
    let (faults, passages, linked) = figures::guide_faults();
    assert!(faults.is_empty(), "{}", faults.join("\n"));
    assert!(passages >= 10, "only {passages} anchored passages");
    assert!(linked >= 10, "only {linked} figures linked");
}

#[test]
fn a_planted_second_value_of_one_figure_is_found() {
    let home = "## T\n\n<a id=\"fig-q8\"></a>Q8_0 sold as f16 is a mismatch in 200 of 200 audits \
                within 16 output tokens (`tests/packs.rs`).\n\n## Next\n";
    let passages = figures::passages(home);
    assert!(
        figures::home_faults(&passages).is_empty(),
        "{:?}",
        figures::home_faults(&passages)
    );
    let good = format!(
        "caught in [200 of 200 audits](docs/{}#fig-q8) always",
        figures::HOME
    );
    assert_eq!(
        figures::faults("README.md", &good, &passages),
        Vec::<String>::new()
    );
    // The same figure with another value, in a link and outside one.
    let linked = good.replace("[200 of 200", "[199 of 200");
    assert_eq!(figures::faults("README.md", &linked, &passages).len(), 1);
    let bare = format!("{good}; honest ones in 199 of 200 within 64 tokens, in 6.4 s");
    assert_eq!(
        figures::faults("README.md", &bare, &passages).len(),
        3,
        "{bare}"
    );
    // Code and link targets are no figures; an anchor that does not exist is.
    let code = format!("{good} `--every 90s` [the run](https://x/2026-11-24)");
    assert!(figures::faults("p", &code, &passages).is_empty());
    let lost = good.replace("#fig-q8", "#fig-q9");
    assert_eq!(figures::faults("p", &lost, &passages).len(), 1);
    // On the figures' page: a wall time without its date and machine.
    let undated = figures::passages("<a id=\"fig-t\"></a>an audit takes 6.4 s (`cargo bench`)\n");
    assert_eq!(figures::home_faults(&undated).len(), 1);
}
