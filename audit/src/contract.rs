//! The API contract checked in every audit against a pack, each its own line with evidence and
//! none of them touching the verdict: billing (`usage` against the pack's token counts and the
//! tokens returned), parameters honoured (temperature-0 repeats, top_logprobs, max_tokens),
//! transport failures counted apart, and, where the provider claims it, determinism (answers
//! that repeat bit for bit whatever else the server computes at the time).

use std::collections::HashMap;

use hspi_collect::http::TransportFailures;
use hspi_datasets::{short_id, GenerationParams, Outputs, ProbeInput, ProbeSet, Record};
use hspi_pack::PromptTokens;
use hspi_reports::contract::{CheckStatus, ContractCheck};

/// Lines of evidence kept per check (the dataset holds every answer).
const EVIDENCE_LINES: usize = 6;

/// A probe asked a second time with a fresh request, to see whether temperature 0 repeats.
pub struct Repeat {
    pub first: Record,
    pub again: Result<Record, hspi_collect::CollectError>,
    /// Whether the claimed platform's answers repeat bit for bit (else only the text must).
    pub bitwise: bool,
}

fn check(name: &str, status: CheckStatus, detail: String, evidence: Vec<String>) -> ContractCheck {
    ContractCheck {
        name: name.into(),
        status,
        detail,
        evidence: evidence.into_iter().take(EVIDENCE_LINES).collect(),
    }
}

fn steps(r: &Record) -> Option<&[hspi_datasets::TokenStep]> {
    match &r.outputs {
        Outputs::Completion { steps, .. } if !steps.is_empty() => Some(steps),
        _ => None,
    }
}

fn text(r: &Record) -> &str {
    match &r.outputs {
        Outputs::Completion { text, .. } => text,
        _ => "",
    }
}

/// Transport failures: every failed attempt by cause, and probes given up on, out of
/// `attempts` requests that brought `answered` answers; `down`, why the audit stopped where the
/// endpoint went down.
pub fn transport(
    failures: &TransportFailures,
    attempts: u64,
    unanswered: &[(String, String)],
    answered: usize,
    down: Option<&str>,
) -> ContractCheck {
    let evidence = unanswered
        .iter()
        .map(|(p, why)| format!("probe {} unanswered: {why}", short_id(p)))
        .collect();
    if let Some(why) = down {
        return check(
            "transport",
            CheckStatus::Fail,
            format!(
                "{why} ({} of {attempts} requests failed: {failures})",
                failures.total()
            ),
            evidence,
        );
    }
    if failures.total() == 0 && unanswered.is_empty() {
        return check(
            "transport",
            CheckStatus::Pass,
            format!("{attempts} requests, none failed"),
            evidence,
        );
    }
    check(
        "transport",
        CheckStatus::Fail,
        format!(
            "{} of {attempts} requests failed ({failures}); {} probes went unanswered after every retry. Failed requests were retried or skipped, never scored: the verdict rests on the {} answers received",
            failures.total(),
            unanswered.len(),
            answered
        ),
        evidence,
    )
}

/// Billing: prompt tokens billed against the pack's count for the exact prompt, completion
/// tokens billed against the tokens returned.
pub fn billing(records: &[Record], counts: Option<&PromptTokens>) -> ContractCheck {
    let with_usage: Vec<(&Record, &hspi_datasets::Usage)> = records
        .iter()
        .filter_map(|r| r.usage.as_ref().map(|u| (r, u)))
        .collect();
    if with_usage.is_empty() {
        return check(
            "billing",
            CheckStatus::Unchecked,
            "the endpoint returned no usage".into(),
            vec![],
        );
    }
    let mut evidence = Vec::new();
    let (mut prompt_checked, mut prompt_off, mut billed, mut counted) = (0, 0, 0u64, 0u64);
    let (mut completion_checked, mut completion_off) = (0, 0);
    for (r, u) in &with_usage {
        if let Some(expected) = counts.and_then(|c| c.counts.get(&r.probe_id)) {
            prompt_checked += 1;
            billed += u.prompt_tokens;
            counted += expected;
            if u.prompt_tokens != *expected {
                prompt_off += 1;
                evidence.push(format!(
                    "probe {}: {} prompt tokens billed, {expected} in the prompt ({:+.1} %)",
                    short_id(&r.probe_id),
                    u.prompt_tokens,
                    pct_over(u.prompt_tokens, *expected)
                ));
            }
        }
        if let Some(steps) = steps(r) {
            completion_checked += 1;
            if u.completion_tokens != steps.len() as u64 {
                completion_off += 1;
                evidence.push(format!(
                    "probe {}: {} completion tokens billed, {} returned",
                    short_id(&r.probe_id),
                    u.completion_tokens,
                    steps.len()
                ));
            }
        }
    }
    let prompt = match counts {
        None => "prompt tokens not checked (the pack holds no token counts)".to_string(),
        Some(_) if prompt_off == 0 => format!(
            "prompt tokens billed as counted on {prompt_checked} of {prompt_checked} answers"
        ),
        Some(c) => format!(
            "prompt tokens billed differ from the count on {prompt_off} of {prompt_checked} answers: {billed} billed against {counted} counted ({:+.1} %; counted by {})",
            pct_over(billed, counted),
            c.counted_by
        ),
    };
    let completion = if completion_off == 0 {
        format!("completion tokens billed as returned on {completion_checked} answers")
    } else {
        format!("completion tokens billed differ from those returned on {completion_off} of {completion_checked} answers")
    };
    let status = if prompt_off + completion_off > 0 {
        CheckStatus::Fail
    } else if prompt_checked + completion_checked == 0 {
        CheckStatus::Unchecked
    } else {
        CheckStatus::Pass
    };
    check(
        "billing",
        status,
        format!("{prompt}; {completion}"),
        evidence,
    )
}

fn pct_over(billed: u64, counted: u64) -> f64 {
    if counted == 0 {
        return 0.0;
    }
    (billed as f64 - counted as f64) / counted as f64 * 100.0
}

/// Parameters honoured: top_logprobs count, max_tokens, and a temperature-0 repeat.
pub fn parameters(records: &[Record], probes: &ProbeSet, repeat: Option<&Repeat>) -> ContractCheck {
    let params: HashMap<&str, &GenerationParams> = probes
        .probes
        .iter()
        .filter_map(|p| match &p.input {
            ProbeInput::Prompt { params, .. } => Some((p.id.as_str(), params)),
            _ => None,
        })
        .collect();
    let mut evidence = Vec::new();
    let mut found = Vec::new();
    let (mut top_off, mut no_logprobs, mut too_long) = (0, 0, 0);
    for r in records {
        let Some(p) = params.get(r.probe_id.as_str()) else {
            continue;
        };
        let returned = steps(r).map_or(0, <[_]>::len) as u64;
        let billed = r.usage.as_ref().map_or(0, |u| u.completion_tokens);
        if returned.max(billed) > u64::from(p.max_tokens) {
            too_long += 1;
            evidence.push(format!(
                "probe {}: {} tokens generated, max_tokens was {}",
                short_id(&r.probe_id),
                returned.max(billed),
                p.max_tokens
            ));
        }
        if p.top_logprobs == 0 {
            continue;
        }
        match steps(r) {
            None => no_logprobs += 1,
            Some(steps) => {
                let wrong: Vec<usize> = steps
                    .iter()
                    .map(|s| s.top.len())
                    .filter(|n| *n != p.top_logprobs as usize)
                    .collect();
                if !wrong.is_empty() {
                    top_off += 1;
                    evidence.push(format!(
                        "probe {}: {} of {} tokens came with {} alternatives, {} were asked for",
                        short_id(&r.probe_id),
                        wrong.len(),
                        steps.len(),
                        wrong[0],
                        p.top_logprobs
                    ));
                }
            }
        }
    }
    let n = records.len();
    if top_off > 0 {
        found.push(format!(
            "top_logprobs not honoured on {top_off} of {n} answers"
        ));
    }
    if no_logprobs > 0 {
        found.push(format!(
            "logprobs asked for and not returned on {no_logprobs} of {n} answers"
        ));
    }
    if too_long > 0 {
        found.push(format!("max_tokens exceeded on {too_long} of {n} answers"));
    }
    let repeated = repeat.map(|rep| match &rep.again {
        Err(why) => (
            None,
            format!("the temperature-0 repeat got no answer ({})", no_answer(why)),
        ),
        Ok(again) => {
            let same = if rep.bitwise {
                again.outputs.identity_bytes() == rep.first.outputs.identity_bytes()
            } else {
                text(again) == text(&rep.first)
            };
            let what = if rep.bitwise {
                "bit for bit (the claimed platform repeats itself exactly)"
            } else {
                "in its text (bits are compared only where every claimed platform was measured to repeat bit for bit)"
            };
            let line = format!(
                "probe {} asked twice at temperature 0: {} {what}",
                short_id(&rep.first.probe_id),
                if same { "the same answer" } else { "a different answer" }
            );
            (Some(same), line)
        }
    });
    let mut detail = Vec::new();
    if let Some((same, line)) = &repeated {
        if *same == Some(false) {
            found.push(line.clone());
        } else {
            detail.push(line.clone());
        }
    }
    if found.is_empty() {
        let mut parts = vec![format!(
            "top_logprobs and max_tokens honoured on {n} of {n} answers"
        )];
        parts.extend(detail);
        return check("parameters", CheckStatus::Pass, parts.join("; "), evidence);
    }
    found.extend(detail);
    check("parameters", CheckStatus::Fail, found.join("; "), evidence)
}

/// How often the provider's claimed determinism is tested: this share of the answered prompts
/// is asked again (at least two).
pub const DETERMINISM_SHARE: usize = 2;

/// The answers to ask again for a determinism claim: every second one, at least two, less the
/// first (the parameters check asks that one again already; its repeat is reused).
pub fn determinism_probes(records: &[Record]) -> Vec<&Record> {
    let every = records
        .len()
        .div_ceil(DETERMINISM_SHARE)
        .max(2.min(records.len()));
    let step = (records.len() / every.max(1)).max(1);
    records.iter().step_by(step).take(every).skip(1).collect()
}

/// Determinism, where the provider claims its answers repeat bit for bit (batch-invariant or
/// deterministic serving): each repeat against its first answer, with the jitter where they
/// differ (the first token that differs, the largest logprob difference before it).
pub fn determinism<'a>(repeats: impl IntoIterator<Item = &'a Repeat>) -> ContractCheck {
    let mut evidence = Vec::new();
    let (mut differ, mut unanswered, mut n) = (0, 0, 0);
    for rep in repeats {
        n += 1;
        let id = short_id(&rep.first.probe_id);
        let again = match &rep.again {
            Ok(a) => a,
            Err(why) => {
                unanswered += 1;
                evidence.push(format!(
                    "probe {id}: the repeat got no answer ({})",
                    no_answer(why)
                ));
                continue;
            }
        };
        if again.outputs.identity_bytes() == rep.first.outputs.identity_bytes() {
            continue;
        }
        differ += 1;
        evidence.push(match (steps(&rep.first), steps(again)) {
            (Some(a), Some(b)) => {
                let same_tokens = a
                    .iter()
                    .zip(b)
                    .take_while(|(x, y)| x.token == y.token)
                    .count();
                let jitter = a
                    .iter()
                    .zip(b)
                    .take(same_tokens)
                    .filter_map(|(x, y)| {
                        Some((x.logprob.as_ref()?.value() - y.logprob.as_ref()?.value()).abs())
                    })
                    .fold(0f32, f32::max);
                let text = match same_tokens < a.len().max(b.len()) {
                    true => format!("the text parts at token {}", same_tokens + 1),
                    false => "the same text".to_string(),
                };
                format!("probe {id}: {text}, logprobs differ by up to {jitter:.2e} before it")
            }
            _ => format!("probe {id}: another answer"),
        });
    }
    let answered = n - unanswered;
    // A repeat the budget or the transport lost is no evidence either way.
    let lost = match unanswered {
        0 => String::new(),
        k => format!("; {k} of {n} repeats got no answer"),
    };
    if differ > 0 {
        return check(
            "determinism",
            CheckStatus::Fail,
            format!("{differ} of {answered} prompts asked again answered otherwise{lost}"),
            evidence,
        );
    }
    if answered == 0 {
        return check(
            "determinism",
            CheckStatus::Unchecked,
            format!("no prompt could be asked again{lost}"),
            evidence,
        );
    }
    check(
        "determinism",
        CheckStatus::Pass,
        format!("{answered} of {answered} prompts asked again answered bit for bit the same{lost}"),
        evidence,
    )
}

/// Why a repeat got no answer, in a contract line: a spending cap without collect's `--resume`
/// hint (an audit has none), any other failure as it reads.
fn no_answer(why: &hspi_collect::CollectError) -> String {
    match why {
        hspi_collect::CollectError::Budget { reached, .. } => {
            format!("spending cap reached: {reached}")
        }
        e => e.to_string(),
    }
}
