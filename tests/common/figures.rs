//! Each measured figure in one place (checked by tests/docs.rs). docs/how-hspi-decides.md holds every figure a script can
//! extract (counts over audits, tokens to a verdict, wall times, dates) beside the test or bench
//! that measures it; the README and every other page of docs/ state one only as a link to the
//! passage that holds it (`[200 of 200](how-hspi-decides.md#fig-…)`), whose text that passage says
//! word for word. So a figure given a second value anywhere fails here: in a link (its text is no
//! longer the passage's) or outside one (a figure outside the figures' page).

use std::collections::BTreeMap;
use std::path::PathBuf;

use regex::Regex;

/// The page every measured figure lives on.
pub const HOME: &str = "how-hspi-decides.md";

/// The figures a script can extract from prose: counts over audits, tokens to a verdict, wall
/// times and dates.
pub fn figures() -> Regex {
    Regex::new(
        r"(?x)
          \b\d+(?:[–-]\d+)?\s?(?:/|of)\s?(?:100|200)\b
        | \bwithin\s\d+(?:\s/\s\d+)?\s(?:output\s)?tokens\b
        | \b\d+\s(?:output\s)?tokens\son\saverage\b
        | \b\d+(?:\.\d+)?\s?(?:ms|µs|s|min|minutes|seconds|hours)\b
        | \b20\d\d-\d\d-\d\d\b",
    )
    .unwrap()
}

/// The README and docs/*.md, each with its text.
fn pages() -> Vec<(PathBuf, String)> {
    super::guide_pages()
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect()
}

/// `text` without what is not prose: fenced blocks, code spans, HTML comments (each replaced by
/// a space, so words around them stay apart).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            out.push('\n');
            continue;
        }
        if !fenced {
            out.push_str(line);
        }
        out.push('\n');
    }
    let spans = Regex::new(r"(?s)`[^`\n]*`|<!--.*?-->").unwrap();
    spans.replace_all(&out, " ").into_owned()
}

/// Whitespace and table bars folded, so a figure reads the same wherever a line breaks.
fn folded(text: &str) -> String {
    text.replace('|', " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The figures' page cut at its anchors (`<a id="fig-…"></a>`): each anchor's passage, from it to
/// the next anchor or heading, folded.
pub fn passages(home: &str) -> BTreeMap<String, String> {
    let anchor = Regex::new(r#"<a id="(fig-[a-z0-9-]+)"></a>"#).unwrap();
    let mut passages = BTreeMap::new();
    let mut current: Option<(String, String)> = None;
    for line in home.lines() {
        let starts = anchor.captures(line).map(|c| c[1].to_string());
        if starts.is_some() || line.starts_with('#') {
            if let Some((id, text)) = current.take() {
                assert!(
                    passages.insert(id.clone(), folded(&text)).is_none(),
                    "{HOME}: the anchor {id} twice"
                );
            }
        }
        if let Some(id) = starts {
            current = Some((id, String::new()));
        }
        if let Some((_, text)) = current.as_mut() {
            text.push_str(&anchor.replace_all(line, " "));
            text.push('\n');
        }
    }
    if let Some((id, text)) = current {
        assert!(passages.insert(id.clone(), folded(&text)).is_none());
    }
    passages
}

/// What is wrong with `page`'s figures (named `name`): each link to a figure whose text its
/// passage does not say, each link to an anchor that does not exist, each figure outside a link.
pub fn faults(name: &str, page: &str, passages: &BTreeMap<String, String>) -> Vec<String> {
    let link = Regex::new(&format!(
        r"\[([^\]]+)\]\((?:docs/)?{}#(fig-[a-z0-9-]+)\)",
        regex::escape(HOME)
    ))
    .unwrap();
    let any_target = Regex::new(r"\]\([^)]*\)").unwrap();
    let mut faults = Vec::new();
    let text = prose(page);
    for c in link.captures_iter(&text) {
        let (said, id) = (folded(&c[1]), &c[2]);
        // A link that states a number states the passage's; "[figures](…)" is only the way there.
        let states = said.chars().any(|c| c.is_ascii_digit());
        match passages.get(id) {
            None => faults.push(format!(
                "{name}: [{said}] links to #{id}, which {HOME} lacks"
            )),
            Some(passage) if states && !passage.contains(&said) => faults.push(format!(
                "{name}: \"{said}\" is not what {HOME}#{id} says: {}…",
                passage.chars().take(300).collect::<String>()
            )),
            Some(_) => {}
        }
    }
    // Outside those links, no figure at all (link targets are addresses, not prose).
    let rest = link.replace_all(&text, " ");
    let rest = any_target.replace_all(&rest, "]");
    for (n, line) in rest.lines().enumerate() {
        for m in figures().find_iter(line) {
            faults.push(format!(
                "{name}:{}: \"{}\" is a figure outside {HOME}: link it to the passage that measures it",
                n + 1,
                m.as_str()
            ));
        }
    }
    faults
}

/// The figures' page itself: every passage that states a figure names the test or bench that
/// measures it, and one with a wall time also its date and machine.
pub fn home_faults(passages: &BTreeMap<String, String>) -> Vec<String> {
    let wall = Regex::new(r"\b\d+(?:\.\d+)?\s?(?:ms|µs|s|min|minutes|seconds)\b").unwrap();
    let date = Regex::new(r"\b20\d\d-\d\d-\d\d\b").unwrap();
    let mut faults = Vec::new();
    for (id, passage) in passages {
        if !passage.chars().any(|c| c.is_ascii_digit()) {
            faults.push(format!("{HOME}#{id}: an anchor with no figure after it"));
        }
        if !(passage.contains("tests/") || passage.contains("cargo bench")) {
            faults.push(format!("{HOME}#{id}: names no test or bench"));
        }
        let machine = ["VM", "machine", "Xeon", "EPYC", "H100", "H200"]
            .iter()
            .any(|m| passage.contains(m));
        if wall.is_match(passage) && !(date.is_match(passage) && machine) {
            faults.push(format!(
                "{HOME}#{id}: a wall time without its date and machine"
            ));
        }
    }
    faults
}

fn home_passages() -> BTreeMap<String, String> {
    let (_, home) = pages()
        .into_iter()
        .find(|(p, _)| p.ends_with(HOME))
        .unwrap();
    passages(&home)
}

/// Everything wrong with the guide's figures (the README and docs/), with how many anchored
/// passages the figures' page holds and how many links to them the other pages make.
pub fn guide_faults() -> (Vec<String>, usize, usize) {
    let passages = home_passages();
    let mut all = home_faults(&passages);
    let mut linked = 0;
    for (path, text) in pages() {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name == HOME {
            continue;
        }
        linked += text.matches(&format!("{HOME}#fig-")).count();
        all.extend(faults(&name, &text, &passages));
    }
    (all, passages.len(), linked)
}
