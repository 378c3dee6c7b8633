//! The report model (schema `hspi-report/1`): what `audit`, `verify`, `identify` and `eval`
//! produce and every exporter reads. The summary speaks to a reader who is not an engineer; the
//! evidence section keeps everything an engineer needs to re-check it.

use hspi_classify::evaluate::EvalReport;
use hspi_classify::verify::{Verdict, VerifyReport};
use hspi_classify::{Decision, Identification};
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "hspi-report/1";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Spent {
    pub queries: u64,
    pub requests: u64,
    pub output_tokens: u64,
    pub cost: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subject {
    pub endpoint: Option<String>,
    pub model: String,
    /// The model's architecture family (`gemma3`, `llama`, …), where the pack or weights name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    pub claim: Option<String>,
}

impl Subject {
    /// The model as a report names it: with its architecture where known.
    pub fn model_named(&self) -> String {
        match &self.architecture {
            Some(arch) => format!("{} ({arch})", self.model),
            None => self.model.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// One sentence: what was found.
    pub finding: String,
    /// consistent / mismatch / unknown platform / inconclusive / tampered / identified / evaluated.
    pub verdict: String,
    pub confidence: Option<f64>,
    /// What the reader should do next.
    pub next_step: String,
}

impl Summary {
    /// The error target a decided verdict was held to, in words for a reader who is not a
    /// statistician: `confidence` is one minus that target, never the probability that the
    /// provider did or did not cheat. None for a verdict that decided nothing.
    pub fn error_target(&self) -> Option<String> {
        let c = self.confidence?;
        let target = format!("{:.1} %", (1.0 - c) * 100.0);
        Some(match self.verdict.as_str() {
            "mismatch" => format!(
                "at most {target} of honest providers would be accused by such a test (its false-accusation target; not the probability that this provider cheated)"
            ),
            "mixed" => format!(
                "a mixture is named only from 3 answers of each format, each settled with every other format ruled out; no honest provider measured was ever called mixed (the false-accusation target, {target}, is not a computed bound here)"
            ),
            "consistent" => format!(
                "at most {target} of providers serving a known other platform would pass such a test (its false-acceptance target; platforms hspi holds no reference for are not covered)"
            ),
            "tampered" => "no error target: the answers hold values no known engine produces".into(),
            "evaluated" => format!(
                "{:.1} % of single test queries named right (measured on held-out answers)",
                c * 100.0
            ),
            _ => format!(
                "the named class's probability under hspi's model of the known platforms: {:.1} %",
                c * 100.0
            ),
        })
    }
}

/// The reference knowledge the finding rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Atlas {
    pub classifier_id: Option<String>,
    /// Known classes (EQCs): `id platform[ = platform…]`.
    pub classes: Vec<String>,
    /// Datasets of hspi's own recomputation used as references.
    pub references: Vec<String>,
}

impl Atlas {
    pub fn new(
        classifier_id: Option<String>,
        classes: &[hspi_classify::model::ClassLabel],
        references: &[std::path::PathBuf],
    ) -> Atlas {
        Atlas {
            classifier_id,
            classes: classes
                .iter()
                .map(|c| {
                    let m: Vec<String> = c.members.iter().map(ToString::to_string).collect();
                    format!("{} {}", c.id, m.join(" = "))
                })
                .collect(),
            references: references.iter().map(|r| r.display().to_string()).collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Evidence {
    Audit {
        verification: VerifyReport,
        identification: Identification,
        /// Dataset directory holding every answer received.
        dataset: String,
    },
    Verify {
        verification: VerifyReport,
    },
    Identify {
        identifications: Vec<Identification>,
    },
    Eval {
        eval: EvalReport,
    },
    /// `hspi report --from WATCH_DIR`: every watched provider over every round.
    Watch {
        comparison: crate::comparison::Comparison,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub tool: String,
    pub created_unix: u64,
    /// UTC, ISO 8601.
    pub created: String,
    pub subject: Subject,
    pub summary: Summary,
    pub spent: Spent,
    pub atlas: Atlas,
    pub methodology: Vec<String>,
    pub limitations: Vec<String>,
    pub evidence: Evidence,
    /// The API contract checks of an audit against a pack.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contract: Vec<crate::contract::ContractCheck>,
    /// The pool prompts an audit against a pack drew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub draw: Option<crate::contract::PackDraw>,
}

/// Everything a report needs besides its evidence.
pub struct Context {
    pub tool_version: String,
    pub created_unix: u64,
    pub subject: Subject,
    pub spent: Spent,
    pub atlas: Atlas,
}

impl Context {
    /// A context stamped now, with this build's version (the workspace shares one version).
    pub fn now(subject: Subject, spent: Spent, atlas: Atlas) -> Context {
        Context {
            tool_version: env!("CARGO_PKG_VERSION").into(),
            created_unix: hspi_datasets::manifest::unix_now(),
            subject,
            spent,
            atlas,
        }
    }
}

pub fn iso_date(unix: u64) -> String {
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm), UTC.
    let days = (unix / 86_400) as i64;
    let secs = unix % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

const METHOD_VERIFY: &str = "Each answer's low-order bits are compared with hspi's own recomputation of the same prompt on reference platforms; an answer identical bit for bit to one platform's counts for it, any other is scored by a trained classifier. A sequential likelihood-ratio test (Wald's thresholds for 1 % false accusation and 1 % false acceptance, at most 3 nats per answer) stops as soon as the evidence suffices.";
const METHOD_INTEGRITY: &str = "Answers are checked for values no known engine produces (logprobs that are not exact f32 numbers, a sampled token whose logprob differs from its own top-list entry, unsorted lists, positive logprobs): any such answer means the values were altered after they were computed.";
const METHOD_CLASSIFY: &str = "Platforms whose answers are bit-identical on every probe form one equivalence class (EQC); the classifier (multinomial logistic regression, regularisation chosen by probe-grouped cross-validation) names EQCs, never platforms it cannot tell apart, and calls answers unlike every known class 'unknown platform'.";
const LIMIT_ATLAS: &str = "Only platforms in the reference atlas can be named; a platform never collected can at best be reported as unknown.";
const LIMIT_BATCH: &str = "Servers batching concurrent requests answer with other bits (measured on llama.cpp for F32 and F16); claims should leave the batch size open unless the atlas holds the loaded platform.";
const LIMIT_POOL: &str = "The pool ships with the pack: a provider holding the pack could recognise its prompts. The references are exact only for the platforms the pack covers; another build or GPU is judged on the format evidence, which tolerates hardware, build and batching differences.";
const LIMIT_FRESH: &str = "Fresh prompts test the format and the model: the references are hspi's own engine in every format it computes, plus any engine named with --reference-server or --reference-endpoint on the platform the auditor stated for it (the atlas lists them), so hardware, engine, kernel and batch are left to a pack audit (without --weights) unless a named engine is the provider's own. The prompts are word sequences of hspi's generator: a provider that routes prompts of that style apart from its other traffic is not ruled out.";
const LIMIT_MODEL: &str = "The error rates hold under the classifier's model of each platform; they are targets, not guarantees against an adversary who knows the method.";

impl Report {
    /// The report's title: the audited endpoint (or dataset), or for a watch its providers.
    pub fn title(&self) -> String {
        match &self.evidence {
            Evidence::Watch { comparison } => format!(
                "hspi comparison: {} providers of {}",
                comparison.providers.len(),
                if self.subject.model.is_empty() {
                    "one model"
                } else {
                    &self.subject.model
                }
            ),
            _ => format!(
                "hspi report: {}",
                self.subject
                    .endpoint
                    .as_deref()
                    .unwrap_or(&self.subject.model)
            ),
        }
    }

    /// The exit code of the verdict the report carries (0 for reports without one): 0
    /// consistent, 1 mismatch / unknown / tampered, 3 inconclusive.
    pub fn exit_code(&self) -> u8 {
        match &self.evidence {
            Evidence::Audit { verification, .. } | Evidence::Verify { verification } => {
                verification.exit_code()
            }
            Evidence::Watch { comparison } => comparison.worst().exit_code(),
            _ => 0,
        }
    }

    fn new(
        ctx: Context,
        summary: Summary,
        evidence: Evidence,
        methodology: &[&str],
        limitations: &[&str],
    ) -> Report {
        Report {
            schema: SCHEMA.into(),
            tool: format!("hspi {}", ctx.tool_version),
            created_unix: ctx.created_unix,
            created: iso_date(ctx.created_unix),
            subject: ctx.subject,
            summary,
            spent: ctx.spent,
            atlas: ctx.atlas,
            methodology: methodology.iter().map(|s| s.to_string()).collect(),
            limitations: limitations.iter().map(|s| s.to_string()).collect(),
            evidence,
            contract: Vec::new(),
            draw: None,
        }
    }

    pub fn from_audit(
        ctx: Context,
        verification: VerifyReport,
        identification: Identification,
        dataset: String,
    ) -> Report {
        let summary = verify_summary(&verification);
        Report::new(
            ctx,
            summary,
            Evidence::Audit {
                verification,
                identification,
                dataset,
            },
            &[METHOD_VERIFY, METHOD_INTEGRITY, METHOD_CLASSIFY],
            &[LIMIT_ATLAS, LIMIT_BATCH, LIMIT_MODEL],
        )
    }

    /// Add an audit's contract checks and its draw from a pack (stated among the limitations:
    /// what the random draw does and does not protect against).
    pub fn with_contract(
        mut self,
        contract: Vec<crate::contract::ContractCheck>,
        draw: Option<crate::contract::PackDraw>,
    ) -> Report {
        if let Some(d) = &draw {
            if let Evidence::Audit { verification, .. } = &self.evidence {
                let drawn_out = d.fresh_space.is_none() && verification.queries >= d.drawn;
                if drawn_out && self.summary.next_step == NEXT_STEP_BUDGET {
                    self.summary.next_step = next_step_draw_more(d);
                }
            }
            self.limitations.push(d.sentence());
            self.limitations.push(if d.fresh_space.is_some() {
                LIMIT_FRESH.into()
            } else {
                LIMIT_POOL.into()
            });
        }
        self.contract = contract;
        self.draw = draw;
        self
    }

    pub fn from_verify(ctx: Context, verification: VerifyReport) -> Report {
        let summary = verify_summary(&verification);
        Report::new(
            ctx,
            summary,
            Evidence::Verify { verification },
            &[METHOD_VERIFY, METHOD_INTEGRITY],
            &[LIMIT_ATLAS, LIMIT_BATCH, LIMIT_MODEL],
        )
    }

    pub fn from_identify(ctx: Context, identifications: Vec<Identification>) -> Report {
        let named: Vec<String> = identifications
            .iter()
            .map(|i| match &i.decision {
                Decision::Identified { name, .. } => format!("{} serves {name}", i.target),
                Decision::OneOf { classes } => {
                    format!("{} serves one of {}", i.target, classes.join(", "))
                }
                Decision::Unknown { .. } => format!("{} serves an unknown platform", i.target),
            })
            .collect();
        let unknown = identifications
            .iter()
            .any(|i| matches!(i.decision, Decision::Unknown { .. }));
        let summary = Summary {
            finding: named.join("; "),
            verdict: if unknown {
                "unknown platform"
            } else {
                "identified"
            }
            .into(),
            confidence: identifications
                .iter()
                .filter_map(|i| i.posterior.first().map(|p| p.probability))
                .reduce(f64::min),
            next_step: if unknown {
                "Collect a reference dataset for the platform the provider names and identify again.".into()
            } else {
                "Compare the identified platform with the contract; run `hspi audit` with the contracted claim.".into()
            },
        };
        Report::new(
            ctx,
            summary,
            Evidence::Identify { identifications },
            &[METHOD_CLASSIFY],
            &[LIMIT_ATLAS, LIMIT_MODEL],
        )
    }

    pub fn from_eval(ctx: Context, eval: EvalReport) -> Report {
        let best = eval
            .hspi
            .by_queries
            .points
            .iter()
            .map(|p| p.1)
            .fold(0.0, f64::max);
        let summary = Summary {
            finding: format!(
                "On probes unseen in training, hspi names the platform class right {:.1} % of the time from one query and {:.1} % at best ({} classes; random guessing {:.1} %).",
                eval.hspi.single_query * 100.0,
                best * 100.0,
                eval.classes.len(),
                eval.random_guess * 100.0
            ),
            verdict: "evaluated".into(),
            confidence: Some(eval.hspi.single_query),
            next_step: "Use the query count where accuracy reaches the level you need as the audit budget.".into(),
        };
        Report::new(
            ctx,
            summary,
            Evidence::Eval { eval },
            &[METHOD_CLASSIFY],
            &[LIMIT_ATLAS, LIMIT_MODEL],
        )
    }
}

const METHOD_WATCH: &str = "Every round, each provider is audited with a fresh random draw from the pack's pool, the providers in a random order and the rounds at jittered times. A provider's state on a dimension is the value its decided rounds keep naming; a change is flagged when decided rounds naming another value outnumber those naming the state by the stated margin (Page's CUSUM), so one inconclusive round or one stray verdict never flags.";
const LIMIT_WATCH: &str = "A provider can change between rounds and back unseen; the shares describe the rounds audited, not the traffic between them.";

impl Report {
    pub fn from_watch(ctx: Context, comparison: crate::comparison::Comparison) -> Report {
        use hspi_classify::dimension_verdict::DimensionStatus as S;
        let named = |status: S| -> Vec<String> {
            comparison
                .providers
                .iter()
                .filter(|p| p.worst() == status)
                .map(|p| p.provider.clone())
                .collect()
        };
        let mut parts = Vec::new();
        for (status, what) in [
            (S::Consistent, "served what they claim"),
            (S::Mismatch, "did not serve what they claim"),
            (S::Unknown, "served a platform hspi does not know"),
            (S::Inconclusive, "have no verdict yet"),
        ] {
            let names = named(status);
            if !names.is_empty() {
                parts.push(format!("{} {what}", names.join(", ")));
            }
        }
        let changes = comparison.changes();
        let mut finding = format!(
            "{} providers watched over {} rounds: {}.",
            comparison.providers.len(),
            comparison.rounds,
            parts.join("; ")
        );
        if !changes.is_empty() {
            let list: Vec<String> = changes
                .iter()
                .map(|(p, c)| crate::comparison::change_sentence(p, c))
                .collect();
            finding.push_str(&format!(" Changes: {}.", list.join("; ")));
        }
        let worst = comparison.worst();
        let summary = Summary {
            finding,
            verdict: worst.name().into(),
            confidence: None,
            next_step: match worst {
                S::Consistent => "Keep watching; compare providers on cost.".into(),
                S::Mismatch => "Raise the mismatches with their providers, attaching the signed bundle of this report and its rounds.".into(),
                S::Unknown => "Ask the providers with unknown platforms what serves the model; collect references for it.".into(),
                S::Inconclusive => "Watch more rounds, or raise the per-round budget (--draw, --max-requests).".into(),
            },
        };
        Report::new(
            ctx,
            summary,
            Evidence::Watch { comparison },
            &[METHOD_WATCH, METHOD_VERIFY, METHOD_INTEGRITY],
            &[
                LIMIT_WATCH,
                LIMIT_ATLAS,
                LIMIT_BATCH,
                LIMIT_POOL,
                LIMIT_MODEL,
            ],
        )
    }
}

/// The next step of an audit the budget ended undecided.
const NEXT_STEP_BUDGET: &str =
    "Audit again with a larger budget (--max-queries, --max-tokens-total).";

/// The next step of a pool audit that asked every prompt it drew and stayed undecided: only more
/// prompts help (each asks a fixed number of tokens, so a larger token budget is never reached).
fn next_step_draw_more(draw: &crate::contract::PackDraw) -> String {
    format!(
        "Draw more of the pack's prompts (--draw N, up to its {}): this audit asked all {} it drew, so a larger --max-tokens-total cannot help.",
        draw.pool, draw.drawn
    )
}

fn verify_summary(v: &VerifyReport) -> Summary {
    let claimed = v.claimed.join(", ");
    let (finding, next_step) = match &v.verdict {
        Verdict::Consistent => (
            format!("The endpoint's answers are consistent with the claim {} ({claimed}).", v.claim),
            "No action needed; repeat the audit periodically.".to_string(),
        ),
        Verdict::Mismatch { likely_platform, .. } => (
            format!("The endpoint does not serve what is claimed ({}): its answers point to {likely_platform}.", v.claim),
            "Raise the finding with the provider, attaching the signed evidence bundle.".to_string(),
        ),
        Verdict::UnknownPlatform { reason } => (
            format!("The endpoint serves a platform unlike every one hspi knows: {reason}."),
            "Ask the provider which platform serves the model, collect a reference for it, and audit again.".to_string(),
        ),
        Verdict::Inconclusive { reason } => (
            format!("The evidence did not suffice for a verdict: {reason}."),
            if v.endpoint_down.is_some() {
                "Check that the endpoint answers again (its URL, its key, the provider's status page), then audit again; the answers received are kept with this report.".to_string()
            } else if v.spending_cap.is_some() {
                "Raise the spending cap (--max-requests, --max-output-tokens, --max-cost) and audit again; the answers paid for are kept in --out (an audit has no --resume).".to_string()
            } else if v.dimensions.iter().any(|d| d.unseen) {
                "Ask the provider which format or quantisation scheme serves the model, add a reference for it to the pack (hspi pack build --reference-endpoint) and audit again; a larger budget will not decide it.".to_string()
            } else {
                NEXT_STEP_BUDGET.to_string()
            },
        ),
        Verdict::Mixed {
            routes,
            settled,
            unsettled,
        } => (
            format!(
                "The endpoint routes its requests to more than one deployment, not only what is claimed ({}): {}.",
                v.claim,
                hspi_classify::verify::describe_routes(routes, *settled, *unsettled)
            ),
            "Raise the finding with the provider, attaching the signed evidence bundle: a share of the requests paid for was served otherwise.".to_string(),
        ),
        Verdict::Tampered { reason } => (
            format!("The answers were altered after they were computed: {reason}."),
            "Treat the endpoint's logprobs as untrustworthy; raise it with the provider.".to_string(),
        ),
    };
    // What the endpoint showed bounds what the verdict could rest on: say it beside the finding.
    let finding = match &v.presentation {
        Some(shown) => format!(
            "{finding} This endpoint shows {shown}; hspi's references were shown the same way before they were compared."
        ),
        None => finding,
    };
    // A probability the verdict is right exists for a decision held to the error targets; an
    // unknown platform or an inconclusive verdict decided nothing to be sure of.
    let decided = matches!(
        v.verdict,
        Verdict::Consistent
            | Verdict::Mismatch { .. }
            | Verdict::Tampered { .. }
            | Verdict::Mixed { .. }
    );
    Summary {
        finding,
        verdict: v.verdict.name().into(),
        confidence: decided.then_some(v.confidence),
        next_step,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates() {
        assert_eq!(iso_date(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso_date(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso_date(1_795_305_600 + 3661), "2026-11-22T01:01:01Z");
    }
}
