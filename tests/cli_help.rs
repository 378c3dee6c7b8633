//! CLI help that teaches: the commands with many options group them under headings, and the
//! commands an auditor, a pack builder and a procurement team start from end with examples.
//! Snapshots keep the help text reviewed when it changes.

mod common;

use common::*;

fn help(args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.push("--help");
    ok(&all).stdout
}

#[test]
fn audit_help_groups_its_options_and_shows_examples() {
    let text = help(&["audit"]);
    for heading in [
        "Claim:",
        "Pack and prompts:",
        "Endpoint:",
        "Budget and cost:",
        "Statistics:",
        "Output:",
        "Examples:",
    ] {
        assert!(
            text.lines().any(|l| l == heading),
            "no {heading} in:\n{text}"
        );
    }
    insta::assert_snapshot!("audit_help", text);
}

#[test]
fn the_starting_commands_end_with_examples() {
    for args in [&["verify"][..], &["watch"], &["pack", "build"], &["report"]] {
        let text = help(args);
        let examples = text
            .split("\nExamples:\n")
            .nth(1)
            .unwrap_or_else(|| panic!("hspi {} --help has no examples:\n{text}", args.join(" ")));
        // Every example is a command of this very subcommand (or the report it leads to).
        for line in examples.lines().filter(|l| l.starts_with("  hspi ")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert!(
                words[1] == args[0] || words[1] == "report",
                "hspi {} --help: {line}",
                args.join(" ")
            );
        }
        insta::assert_snapshot!(format!("{}_help", args.join("_")), text);
    }
}
