//! The sequential verifier: is the served platform the claimed one? Each answer is weighed by
//! the evidence sources (`crate::sources`: bit-identical to a reference or training answer,
//! decisive up to a cap; otherwise the classifier's log posterior, clamped, or the format
//! evidence; the text; determinism; the model's own distance); the verifier sums their scores
//! in one tally per verdict dimension (the classes' `class_tally.rs`, the format's
//! `format_tally.rs`, the model's `ModelTally`), and after each query compares the generalised
//! likelihood ratio of the best alternative against the best claimed class with Wald's
//! thresholds for the requested error rates (`decide.rs`, the format's own rules in
//! `format_rules.rs`, the model's in `model_rules.rs`). The per-query cap means no single answer decides alone; a budget cap
//! ends in "inconclusive", never in an accusation (`finish.rs`).

mod class_tally;
mod decide;
mod finish;
mod format_rules;
mod format_tally;
mod model_rules;
mod params;
mod report;
mod routed_share;
mod routing;

use hspi_datasets::top_label;
use hspi_datasets::{AskedAs, Dimension, PlatformPattern, Presentation, Record};

use class_tally::ClassTally;
use format_tally::FormatTally;
pub use params::VerifyParams;
pub use report::{QueryEvidence, Verdict, VerifyReport, ENDPOINT_DOWN_EXIT};
pub use routed_share::{describe_routes, RoutedShare};
pub use routing::{clopper_pearson, MIN_ROUTED};

use crate::dimension_verdict::on_claim;
use crate::error::ClassifyError;
use crate::evidence::{for_output_kind, EvidenceMode};
use crate::identify::output_tokens;
use crate::integrity::{violations, Check};
use crate::model::PlatformModel;
use crate::references::ReferenceIndex;
use crate::sources::model_evidence::ModelTally;
use crate::sources::{sources, Answer, Context, EvidenceSource, Weighing};

/// One answer weighed: the method, per class its log-likelihood, and per class its format
/// evidence (None where it has none).
type Weighed = (&'static str, Vec<f64>, Option<Vec<f64>>);

/// Add `v` to the scores in `slot`, or make them `v` when there are none yet.
fn add_into(slot: &mut Option<Vec<f64>>, v: Vec<f64>) {
    match slot {
        None => *slot = Some(v),
        Some(sum) => {
            for (s, x) in sum.iter_mut().zip(v) {
                *s += x;
            }
        }
    }
}

pub struct Verifier<'a> {
    model: &'a PlatformModel,
    /// The references: a pack's, or those an answer source computes for its own answers.
    refs: std::borrow::Cow<'a, ReferenceIndex>,
    /// The class of each reference platform the model reads.
    reference_class: std::collections::HashMap<String, usize>,
    mode: &'static dyn EvidenceMode,
    claim: PlatformPattern,
    /// The claim with the dimensions no known class has left open: what the test can decide.
    tested: PlatformPattern,
    unreferenced: Vec<Dimension>,
    params: VerifyParams,
    /// One tally per verdict dimension: the classes', the format's (where the references cover
    /// every class's format) and the model's.
    class_tally: ClassTally,
    format_tally: Option<FormatTally>,
    /// How far the answers lie from every reference of the claimed model (another model?).
    model_tally: ModelTally,
    evidence: Vec<QueryEvidence>,
    tokens: u64,
    tampered: Vec<String>,
    verdict: Option<Verdict>,
    /// How the last answer that told showed itself, and the coarsest seen.
    shown: Presentation,
    coarsest: Presentation,
    /// Why answers could not be compared with the references, when they were asked otherwise.
    incomparable: Option<String>,
    /// What weighs each answer (`crate::sources`), in registry order.
    sources: Vec<Box<dyn EvidenceSource>>,
}

impl<'a> Verifier<'a> {
    pub fn new(
        model: &'a PlatformModel,
        refs: &'a ReferenceIndex,
        claim: PlatformPattern,
        params: VerifyParams,
    ) -> Result<Verifier<'a>, ClassifyError> {
        params.validate()?;
        if claim.claimed().is_empty() {
            return Err(ClassifyError::ClaimNamesNothing {
                claim: claim.to_string(),
            });
        }
        let mode = for_output_kind(&model.spec.output_kind)?;
        // A claimed value no known class has (hardware hspi holds no reference for) cannot be
        // tested here: the test runs on the other dimensions and can at best be inconclusive.
        let unreferenced: Vec<Dimension> = claim
            .claimed()
            .into_iter()
            .filter(|d| !on_claim(&claim, *d, &model.classes).contains(&true))
            .collect();
        let tested = claim.opened(&unreferenced);
        let claimed: Vec<usize> = model
            .classes
            .iter()
            .enumerate()
            .filter(|(_, c)| c.members.iter().any(|m| tested.matches(m)))
            .map(|(i, _)| i)
            .collect();
        if claimed.is_empty() || tested.claimed().is_empty() {
            let known: Vec<String> = model
                .classes
                .iter()
                .flat_map(|c| c.members.iter().map(ToString::to_string))
                .collect();
            return Err(ClassifyError::ClaimMatchesNoPlatform {
                claim: claim.to_string(),
                known: known.join(", "),
            });
        }
        Ok(Verifier {
            model,
            refs: std::borrow::Cow::Borrowed(refs),
            reference_class: model.reference_classes(),
            mode,
            claim,
            tested,
            unreferenced,
            class_tally: ClassTally::new(model.classes.len(), claimed),
            format_tally: model
                .format_references()
                .map(|f| FormatTally::new(f, model.classes.len())),
            params,
            evidence: Vec::new(),
            tokens: 0,
            tampered: Vec::new(),
            verdict: None,
            shown: Presentation::Exact,
            coarsest: Presentation::Exact,
            incomparable: None,
            model_tally: ModelTally::default(),
            sources: sources(model),
        })
    }

    /// Probe ids ordered so the first ones best separate the claim from its alternatives: those
    /// where most alternative classes' reference answers differ from the claimed class's, as the
    /// endpoint shows its answers (for text-only answers: where the greedy texts differ).
    pub fn order_probes(&self, probes: &[String]) -> Vec<String> {
        let refs = &self.model.spec.references;
        // Each class's first reference platform, in spec order.
        let class_reference: Vec<Option<usize>> = (0..self.model.classes.len())
            .map(|c| {
                refs.iter()
                    .position(|r| self.reference_class.get(r) == Some(&c))
            })
            .collect();
        let mut scored: Vec<(usize, usize, &String)> = probes
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let views = self.refs.views(p, refs);
                let class_view = |c: usize| {
                    class_reference[c].and_then(|j| views[j].as_ref().map(|v| v.shown(self.shown)))
                };
                let claimed: Vec<_> = self
                    .class_tally
                    .claimed
                    .iter()
                    .filter_map(|c| class_view(*c))
                    .collect();
                let separated = (0..self.model.classes.len())
                    .filter(|c| !self.class_tally.claimed.contains(c))
                    .filter_map(class_view)
                    .filter(|v| !claimed.is_empty() && !claimed.iter().any(|c| c.same(v)))
                    .count();
                (separated, i, p)
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        scored.into_iter().map(|s| s.2.clone()).collect()
    }

    /// Add references to weigh answers against: those an answer source computed for its own
    /// answer (teacher forcing on the provider's tokens), before that answer is observed.
    pub fn add_references(&mut self, records: &[Record]) {
        if records.is_empty() {
            return;
        }
        let refs = self.refs.to_mut();
        for r in records {
            refs.add(r);
        }
    }

    /// How the endpoint shows its answers, as far as they have told (exact before the first).
    pub fn presentation(&self) -> Presentation {
        self.shown
    }

    pub fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }

    /// The log-likelihood ratio so far, best alternative against best claimed class.
    pub fn current_llr(&self) -> f64 {
        self.llr()
    }

    /// The format's own log-likelihood ratio so far, where the format is weighed on evidence of
    /// its own (see [`QueryEvidence::format_llr`]).
    pub fn current_format_llr(&self) -> Option<f64> {
        self.format_tally.as_ref().and(self.format_llr())
    }

    fn llr(&self) -> f64 {
        self.class_tally.llr()
    }

    /// Add one answer; returns the verdict once the evidence suffices.
    pub fn observe(&mut self, record: &Record) -> Option<&Verdict> {
        if self.verdict.is_some() {
            return self.verdict.as_ref();
        }
        let shown = Presentation::detect(&record.outputs).unwrap_or(self.shown);
        self.shown = shown;
        if shown.coarseness() > self.coarsest.coarseness() {
            self.coarsest = shown;
        }
        // Rounding by the API is how it prints numbers, not tampering.
        let checks: Vec<Check> = self
            .mode
            .integrity_checks()
            .iter()
            .copied()
            .filter(|c| shown == Presentation::Exact || *c != Check::ExactF32)
            .collect();
        let broken = violations(record, &self.model.integrity, &checks);
        if !broken.is_empty() {
            self.tampered
                .push(format!("probe {}: {}", record.probe_id, broken.join("; ")));
        }
        let asked = record.asked_as();
        let theirs = self.refs.asked(&record.probe_id);
        // hspi's own local computations format prompts as their engine does: not told apart.
        let comparable = asked == AskedAs::Local
            || theirs.is_empty()
            || theirs.contains(&asked)
            || theirs.contains(&AskedAs::Local);
        if !comparable {
            let theirs: Vec<&str> = theirs.iter().map(|a| a.name()).collect();
            self.incomparable = Some(format!(
                "the answers were asked through the {}, hspi's references through the {}: the same prompt formatted otherwise is another input, so they cannot be compared\nhint: collect the references through the same API path as the audit (chat completions apply the chat template, legacy completions send the raw prompt)",
                asked.name(),
                theirs.join(" and the ")
            ));
        }
        let (method, ll, format_ll) = if comparable {
            self.weigh(record, shown)
        } else {
            let none = vec![0.0; self.model.classes.len()];
            ("not comparable", none.clone(), Some(none))
        };
        if let (Some(tally), Some(scores)) = (&mut self.format_tally, &format_ll) {
            let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
            tally.add(scores, &self.model.classes, &on);
        }
        let route = self.format_tally.as_mut().and_then(|t| t.end_answer());
        let before = self.llr();
        self.class_tally.add(&ll);
        let after = self.llr();
        let tokens = output_tokens(record);
        self.tokens += tokens;
        self.evidence.push(QueryEvidence {
            probe: record.probe_id.clone(),
            output_tokens: tokens,
            method: method.into(),
            nearest: self.model.classes[top_label(&ll).unwrap_or(0)].name(),
            llr: if self.evidence.is_empty() {
                after
            } else {
                after - before
            },
            cumulative_llr: after,
            posterior: crate::linear::log_softmax(&self.class_tally.per_class)
                .iter()
                .map(|v| v.exp())
                .collect(),
            integrity: broken.iter().map(|s| s.to_string()).collect(),
            format_llr: self.format_tally.as_ref().and(self.format_llr()),
            model_llr: (self.model_tally.answers() > 0).then_some(self.model_tally.total),
            route: route.map(|f| self.route_name(f)),
        });
        self.verdict = self.decide();
        self.verdict.as_ref()
    }

    /// What the evidence sources read.
    fn context(&self) -> Context<'_> {
        Context {
            model: self.model,
            refs: &self.refs,
            reference_class: &self.reference_class,
            formats: self.format_tally.as_ref().map(|t| &t.references),
            per_query_cap: self.params.per_query_cap,
        }
    }

    /// One comparable answer weighed by every source in registry order (`crate::sources`): the
    /// model's distance joins its tally; a bit-identical reproduction settles the answer (the
    /// other classes at the cap, the format with it); otherwise the sources' scores are summed
    /// per class, and the answer's values join the format shapes.
    fn weigh(&mut self, record: &Record, shown: Presentation) -> Weighed {
        let k = self.model.classes.len();
        let mut sources = std::mem::take(&mut self.sources);
        let cx = self.context();
        let answer = Answer::new(record, shown, &cx);
        let (mut method, mut classes, mut formats) = (None, None, None);
        let (mut reproduced, mut distances) = (None, Vec::new());
        for source in &mut sources {
            match source.weigh(&answer, &cx) {
                Weighing::Abstains => {}
                Weighing::Model(d) => distances.push(d),
                Weighing::Reproduces { method, classes } => {
                    reproduced = Some((method, classes));
                    break;
                }
                Weighing::Scores {
                    method: m,
                    classes: c,
                    formats: f,
                } => {
                    method = method.or(m);
                    add_into(&mut classes, c);
                    if let Some(f) = f {
                        add_into(&mut formats, f);
                    }
                }
            }
        }
        self.sources = sources;
        for d in distances {
            self.model_tally.add(d);
        }
        if let Some((method, m)) = reproduced {
            let ll = self.reproduced_by(&m);
            return (method, ll.clone(), Some(ll));
        }
        if answer.shows_values() {
            if let Some(tally) = &mut self.format_tally {
                tally.add_shapes(&answer);
            }
        }
        (
            method.unwrap_or("no evidence"),
            classes.unwrap_or_else(|| vec![0.0; k]),
            formats,
        )
    }

    /// Scores for an answer bit for bit these classes' (0, the others at the cap), noted as
    /// reproduced with their formats.
    fn reproduced_by(&mut self, m: &[usize]) -> Vec<f64> {
        for c in m {
            self.class_tally.reproduced_by(*c);
        }
        if let Some(tally) = &mut self.format_tally {
            let formats: Vec<_> = m
                .iter()
                .flat_map(|c| &self.model.classes[*c].members)
                .map(|member| member.format)
                .collect();
            tally.reproduced(&formats);
        }
        let cap = self.params.per_query_cap;
        (0..self.model.classes.len())
            .map(|c| if m.contains(&c) { 0.0 } else { -cap })
            .collect()
    }

    /// Whether the budget allows another query of about `next_tokens` output tokens.
    pub fn can_continue(&self, next_tokens: u64) -> bool {
        self.verdict.is_none()
            && self.evidence.len() < self.params.max_queries
            && self.tokens + next_tokens <= self.params.max_output_tokens
    }
}
