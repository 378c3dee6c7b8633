//! The sequential verifier: is the served platform the claimed one? Each answer adds per-class
//! log-likelihoods (bit-identical to a reference or training answer: decisive up to a cap;
//! otherwise the classifier's log posterior, clamped); after each query the generalised
//! likelihood ratio of the best alternative against the best claimed class is compared with
//! Wald's thresholds for the requested error rates. The per-query cap means no single answer
//! decides alone; a budget cap ends in "inconclusive", never in an accusation.

use hspi_datasets::top_label;
use hspi_datasets::{Dimension, Outputs, PlatformPattern, Presentation, Record};
use serde::{Deserialize, Serialize};

use crate::dimension_verdict::{
    dimension_llr, dimension_verdicts, family_members, llr_between, on_claim, DimensionStatus,
    DimensionVerdict, FormatDecision, Thresholds,
};
use crate::error::ClassifyError;
use crate::evidence::{for_output_kind, EvidenceMode};
use crate::exact::Lookup;
use crate::features::View;
use crate::format_evidence::{within_engine_noise, FormatReferences, FORMAT_CAP};
use crate::format_identity::{FormatIdentity, FormatShapes};
use crate::identify::{output_tokens, PER_QUERY_CAP};
use crate::integrity::{violations, Check};
use crate::model::PlatformModel;
use crate::model_evidence::{distance, ModelTally};
use crate::references::{asked_as, ReferenceIndex};
use crate::text_evidence::{TextEvidence, TextReferences};

/// One answer weighed: the method, per class its log-likelihood, and per class its format
/// evidence (None where it has none).
type Weighed = (&'static str, Vec<f64>, Option<Vec<f64>>);

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifyParams {
    /// Target probability of calling an honest server a mismatch.
    pub false_accusation: f64,
    /// Target probability of calling a mismatched server consistent.
    pub false_acceptance: f64,
    pub max_queries: usize,
    pub max_output_tokens: u64,
    /// No verdict but "inconclusive" before this many queries.
    pub min_queries: usize,
    /// Most log-likelihood one answer can contribute (nats).
    pub per_query_cap: f64,
}

impl Default for VerifyParams {
    fn default() -> Self {
        VerifyParams {
            false_accusation: 0.01,
            false_acceptance: 0.01,
            max_queries: 32,
            max_output_tokens: 256,
            min_queries: 2,
            per_query_cap: PER_QUERY_CAP,
        }
    }
}

impl VerifyParams {
    pub fn validate(&self) -> Result<(), ClassifyError> {
        for (name, v) in [
            ("--false-accusation", self.false_accusation),
            ("--false-acceptance", self.false_acceptance),
        ] {
            if !(v > 0.0 && v < 0.5) {
                return Err(ClassifyError::Param(format!(
                    "{name} {v}: must lie in (0, 0.5)"
                )));
            }
        }
        if self.max_queries == 0 || self.min_queries == 0 || self.min_queries > self.max_queries {
            return Err(ClassifyError::Param(format!(
                "query limits: need 1 <= min ({}) <= max ({})",
                self.min_queries, self.max_queries
            )));
        }
        Ok(())
    }
    /// Wald's thresholds on the log-likelihood ratio (alternative against claim).
    pub fn thresholds(&self) -> (f64, f64) {
        let (a, b) = (self.false_accusation, self.false_acceptance);
        (((1.0 - b) / a).ln(), (b / (1.0 - a)).ln())
    }

    /// The format evidence's accusing threshold: one capped answer beyond Wald's. That evidence
    /// is a bounded model of engines hspi never ran, not a calibrated likelihood: at Wald's
    /// threshold alone, PyTorch's fp16 under load was accused in 1 of 200 audits against
    /// llama.cpp references (datasets/atlas/transformers-cpu); one answer more removed that and
    /// caught every measured substitution as before.
    pub fn format_accuse_threshold(&self) -> f64 {
        self.thresholds().0 + FORMAT_CAP
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    Consistent,
    Mismatch {
        likely_class: String,
        likely_platform: String,
        /// The claimed dimensions on which every member of the likely class differs from the
        /// claim (older reports have none).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        dimensions: Vec<Dimension>,
    },
    UnknownPlatform {
        reason: String,
    },
    Inconclusive {
        reason: String,
    },
    Tampered {
        reason: String,
    },
}

impl Verdict {
    /// Exit codes as in DESIGN.md: 0 consistent, 1 mismatch / unknown / tampered, 3 inconclusive.
    /// 0 consistent, 3 inconclusive, 4 unknown platform (nothing accused), 1 mismatch or
    /// tampered (an accusation).
    pub fn exit_code(&self) -> u8 {
        match self {
            Verdict::Consistent => 0,
            Verdict::Inconclusive { .. } => 3,
            Verdict::UnknownPlatform { .. } => 4,
            Verdict::Mismatch { .. } | Verdict::Tampered { .. } => 1,
        }
    }
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Consistent => "consistent",
            Verdict::Mismatch { .. } => "mismatch",
            Verdict::UnknownPlatform { .. } => "unknown platform",
            Verdict::Inconclusive { .. } => "inconclusive",
            Verdict::Tampered { .. } => "tampered",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryEvidence {
    pub probe: String,
    pub output_tokens: u64,
    /// `exact-match`, `reference-match` or `classifier`.
    pub method: String,
    /// The class this answer alone points to.
    pub nearest: String,
    /// This answer's log-likelihood ratio, best alternative against best claimed class.
    pub llr: f64,
    pub cumulative_llr: f64,
    /// Posterior over the model's classes after this answer (uniform prior), in
    /// [`VerifyReport::classes`] order.
    #[serde(default)]
    pub posterior: Vec<f64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub integrity: Vec<String>,
    /// The format's own log-likelihood ratio after this answer (best format off the claim
    /// against the claimed one), where the format is weighed on evidence of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_llr: Option<f64>,
    /// The model's evidence after this answer (another model against the claimed one, nats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_llr: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerifyReport {
    pub claim: String,
    pub claimed: Vec<String>,
    pub alternatives: Vec<String>,
    /// Every class of the model (`id platform`), the order of each evidence's posterior.
    #[serde(default)]
    pub classes: Vec<String>,
    pub verdict: Verdict,
    /// Probability the verdict is right under the model (1 − the error rate it was held to,
    /// or the posterior share when the budget ran out).
    pub confidence: f64,
    pub log_likelihood_ratio: f64,
    /// (mismatch at or above, consistent at or below)
    pub thresholds: (f64, f64),
    /// The format's own thresholds (mismatch at or above, consistent at or below), where the
    /// format is weighed on evidence of its own (`QueryEvidence::format_llr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format_thresholds: Option<(f64, f64)>,
    pub queries: usize,
    pub output_tokens: u64,
    /// How the endpoint showed its answers, when not as exact logprobs ("logprobs rounded to
    /// fp16", "text only (no logprobs)"): the references were shown the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub presentation: Option<String>,
    /// The verdict on each claimed dimension (reports written before it have none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dimensions: Vec<DimensionVerdict>,
    pub evidence: Vec<QueryEvidence>,
}

impl VerifyReport {
    /// The exit code of the worst of the overall verdict and the claimed dimensions (an
    /// accusation, 1, over unknown, 4, over inconclusive, 3, over consistent, 0), so a
    /// dimension found wrong or unknown shows even where the overall test stopped short of it.
    pub fn exit_code(&self) -> u8 {
        let severity = |code: u8| match code {
            0 => 0,
            3 => 1,
            4 => 2,
            _ => 3,
        };
        // The model row decides the exit code only as an accusation: an honest audit settles
        // its platform before the model's own evidence reaches a threshold.
        self.dimensions
            .iter()
            .filter(|d| d.dimension != Dimension::Model || d.status == DimensionStatus::Mismatch)
            .map(|d| d.status.exit_code())
            .chain([self.verdict.exit_code()])
            .max_by_key(|c| severity(*c))
            .unwrap_or(0)
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
    claimed: Vec<usize>,
    params: VerifyParams,
    cumulative: Vec<f64>,
    /// Which references stand for which format, when they cover every class's format.
    formats: Option<FormatReferences>,
    /// Per class, the summed format evidence that tolerates a change of hardware or build.
    format_cumulative: Vec<f64>,
    /// Per answer, the best format off the claim against the best on it, summed: formats that
    /// cannot be told apart among themselves still stand together against the claim.
    format_claim: f64,
    /// Per format (in `formats` order), the summed format evidence.
    format_totals: Vec<f64>,
    /// How far the answers carry each format's own rounding (see `format_identity`).
    shapes: Option<FormatShapes>,
    /// Classes some answer reproduced bit for bit.
    reproduced: Vec<usize>,
    evidence: Vec<QueryEvidence>,
    tokens: u64,
    /// Open-set vectors of answers that matched nothing bit for bit.
    unmatched: Vec<Vec<f64>>,
    /// Answers that ruled out every known class (each repeats bit for bit and answered
    /// that probe otherwise).
    unreproduced: usize,
    tampered: Vec<String>,
    verdict: Option<Verdict>,
    /// How the last answer that told showed itself, and the coarsest seen.
    shown: Presentation,
    coarsest: Presentation,
    /// Which references' texts stand for each class (text-only answers).
    texts: TextReferences,
    text_answers: usize,
    /// Text-only answers whose text is no known class's.
    text_unlike: usize,
    /// Why answers could not be compared with the references, when they were asked otherwise.
    incomparable: Option<String>,
    /// How far the answers lie from every reference of the claimed model (another model?).
    model_tally: ModelTally,
}

impl<'a> Verifier<'a> {
    pub fn new(
        model: &'a PlatformModel,
        refs: &'a ReferenceIndex,
        claim: PlatformPattern,
        params: VerifyParams,
    ) -> Result<Verifier<'a>, ClassifyError> {
        params.validate()?;
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
            return Err(ClassifyError::Param(format!(
                "claim {claim} matches no platform the model knows ({})\nhint: collect a reference dataset for the claimed platform and train on it",
                known.join(", ")
            )));
        }
        Ok(Verifier {
            model,
            refs: std::borrow::Cow::Borrowed(refs),
            reference_class: model.reference_classes(),
            mode,
            claim,
            tested,
            unreferenced,
            claimed,
            cumulative: vec![0.0; model.classes.len()],
            formats: model.format_references(),
            format_cumulative: vec![0.0; model.classes.len()],
            format_claim: 0.0,
            format_totals: model
                .format_references()
                .map_or_else(Vec::new, |f| vec![0.0; f.formats().len()]),
            shapes: model
                .format_references()
                .map(|f| FormatShapes::new(f.formats())),
            reproduced: Vec::new(),
            params,
            evidence: Vec::new(),
            tokens: 0,
            unmatched: Vec::new(),
            unreproduced: 0,
            tampered: Vec::new(),
            verdict: None,
            shown: Presentation::Exact,
            coarsest: Presentation::Exact,
            texts: TextReferences::new(
                &model.spec.references,
                &model.reference_classes(),
                &model.classes,
            ),
            text_answers: 0,
            text_unlike: 0,
            incomparable: None,
            model_tally: ModelTally::default(),
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
                let claimed: Vec<_> = self.claimed.iter().filter_map(|c| class_view(*c)).collect();
                let separated = (0..self.model.classes.len())
                    .filter(|c| !self.claimed.contains(c))
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
        self.formats.as_ref().and(self.format_llr())
    }

    fn llr(&self) -> f64 {
        let best = |set: &mut dyn Iterator<Item = usize>| {
            set.map(|c| self.cumulative[c])
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let claim = best(&mut self.claimed.iter().copied());
        let alt = best(&mut (0..self.cumulative.len()).filter(|c| !self.claimed.contains(c)));
        alt - claim
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
        let asked = asked_as(&record.target);
        let theirs = self.refs.asked(&record.probe_id);
        // hspi's own local computations format prompts as their engine does: not told apart.
        let comparable = asked == "local"
            || theirs.is_empty()
            || theirs.contains(&asked)
            || theirs.contains(&"local");
        if !comparable {
            self.incomparable = Some(format!(
                "the answers were asked through the {asked}, hspi's references through the {}: the same prompt formatted otherwise is another input, so they cannot be compared\nhint: collect the references through the same API path as the audit (chat completions apply the chat template, legacy completions send the raw prompt)",
                theirs.join(" and the ")
            ));
        }
        let (method, ll, format_ll) = if !comparable {
            let none = vec![0.0; self.model.classes.len()];
            ("not comparable", none.clone(), Some(none))
        } else if shown == Presentation::TextOnly {
            self.text_evidence(record)
        } else {
            self.value_evidence(record, shown)
        };
        if let (Some(formats), Some(scores)) = (&self.formats, &format_ll) {
            for (c, v) in self.format_cumulative.iter_mut().zip(scores) {
                *c += v;
            }
            for (t, v) in self
                .format_totals
                .iter_mut()
                .zip(formats.format_scores(scores, &self.model.classes))
            {
                *t += v;
            }
            let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
            if let Some(v) = llr_between(&on, scores) {
                self.format_claim += v;
            }
        }
        if comparable {
            let measured = self.model_distance(record, shown);
            self.model_tally.add(measured);
        }
        let before = self.llr();
        for (c, v) in self.cumulative.iter_mut().zip(&ll) {
            *c += v;
        }
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
            posterior: crate::linear::log_softmax(&self.cumulative)
                .iter()
                .map(|v| v.exp())
                .collect(),
            integrity: broken.iter().map(|s| s.to_string()).collect(),
            format_llr: self.formats.as_ref().and(self.format_llr()),
            model_llr: (self.model_tally.answers() > 0).then_some(self.model_tally.total),
        });
        self.verdict = self.decide();
        self.verdict.as_ref()
    }

    /// Evidence from an answer's values (exact or rounded to a grid): bit-identical to a class's
    /// answer shown the same way, else the classifier (exact values) or the format evidence
    /// (rounded values, which the classifier never saw), less the cap for every class measured
    /// to repeat bit for bit whose own answer differs.
    fn value_evidence(&mut self, record: &Record, shown: Presentation) -> Weighed {
        let cap = self.params.per_query_cap;
        let k = self.model.classes.len();
        let exact = shown == Presentation::Exact;
        let bitwise = match self.model.exact.lookup(record) {
            Lookup::Matches(m) if exact && !m.is_empty() => Some(("exact-match", m)),
            _ => {
                let m: Vec<usize> = self
                    .refs
                    .identical_as(record, shown)
                    .iter()
                    .filter_map(|p| self.reference_class.get(p).copied())
                    .collect();
                (!m.is_empty()).then_some(("reference-match", m))
            }
        };
        // A bit-identical reproduction settles the format as firmly as the class.
        if let Some((method, m)) = bitwise {
            for c in &m {
                if !self.reproduced.contains(c) {
                    self.reproduced.push(*c);
                }
                if let Some(shapes) = &mut self.shapes {
                    for member in &self.model.classes[*c].members {
                        shapes.reproduced(member.format);
                    }
                }
            }
            let ll: Vec<f64> = (0..k)
                .map(|c| if m.contains(&c) { 0.0 } else { -cap })
                .collect();
            return (method, ll.clone(), Some(ll));
        }
        self.add_shapes(record, shown);
        let (method, mut ll, format_ll) = if exact && self.model.has_classifier() {
            let scored = self.model.score_records(&[record], &self.refs);
            let s = scored.into_iter().next().expect("one record scored");
            let format_ll = self
                .formats
                .as_ref()
                .zip(s.format)
                .map(|(f, scores)| f.class_scores(&scores, &self.model.classes));
            let lp = s.log_proba;
            let top = lp.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            self.unmatched.push(s.z);
            let ll: Vec<f64> = lp.iter().map(|v| (v - top).max(-cap)).collect();
            ("classifier", ll, format_ll)
        } else {
            let format_ll = self.shown_format_scores(record, shown);
            let ll = format_ll.clone().unwrap_or_else(|| vec![0.0; k]);
            ("format-evidence", ll, format_ll)
        };
        // A class measured to repeat bit for bit, whose own answer to this probe is known and
        // differs, is ruled out (up to the cap, on top of the classifier's score, so the format
        // evidence between classes stays).
        let ruled = self
            .model
            .ruled_out(record, &self.refs, &self.reference_class, shown);
        for (v, out) in ll.iter_mut().zip(&ruled) {
            if *out {
                *v -= cap;
            }
        }
        if !ruled.contains(&false) {
            self.unreproduced += 1;
        }
        (method, ll, format_ll)
    }

    /// The references' answers to this record's probe (in the spec's order), shown as the
    /// endpoint shows its answers.
    fn references_shown(&self, record: &Record, shown: Presentation) -> Vec<Option<View>> {
        self.refs
            .views(&record.probe_id, &self.model.spec.references)
            .into_iter()
            .map(|v| v.map(|v| v.shown(shown)))
            .collect()
    }

    /// Add an answer the format evidence weighs to the format shapes: against each format's
    /// reference, both shown as the endpoint shows its answers.
    fn add_shapes(&mut self, record: &Record, shown: Presentation) {
        let Some(formats) = &self.formats else {
            return;
        };
        let answer = View::of(&record.outputs).shown(shown);
        let views = self.references_shown(record, shown);
        let by_format: Vec<Option<&View>> = formats
            .reference_indices()
            .map(|i| views.get(i).and_then(Option::as_ref))
            .collect();
        if let Some(shapes) = &mut self.shapes {
            shapes.add(&answer, &by_format);
        }
    }

    /// How far this answer lies from the nearest reference of the claimed model: its values
    /// against the references' shown the same way, or its text against their tokens.
    fn model_distance(
        &self,
        record: &Record,
        shown: Presentation,
    ) -> Option<crate::model_evidence::ModelDistance> {
        let answer = View::of(&record.outputs).shown(shown);
        let theirs = if shown == Presentation::TextOnly {
            Presentation::Exact
        } else {
            shown
        };
        let views = self.references_shown(record, theirs);
        let refs: Vec<&View> = views.iter().flatten().collect();
        distance(&answer, &refs)
    }

    /// The model's own accusing threshold: the format evidence's (one capped answer beyond
    /// Wald's), as its scores are bounded the same way.
    fn model_accuse(&self) -> f64 {
        self.params.format_accuse_threshold()
    }

    /// "Another model": the answers lie beyond every format and engine of the claimed model.
    fn model_mismatch(&self) -> Option<Verdict> {
        (self.model_tally.total >= self.model_accuse()).then(|| Verdict::Mismatch {
            likely_class: String::new(),
            likely_platform: format!(
                "another model: the answers are not {} in any format hspi knows ({})",
                self.model.model.id,
                self.model_tally.describe()
            ),
            dimensions: vec![Dimension::Model],
        })
    }

    /// Whether the model's evidence leans towards another model: no format or platform is
    /// named, nor the claim confirmed, until it settles.
    fn model_unsettled(&self) -> bool {
        self.model_tally.total > 0.0
    }

    /// The verdict on the model itself, once any answer was measured.
    fn model_verdict(&self) -> Option<DimensionVerdict> {
        if self.model_tally.answers() == 0 {
            return None;
        }
        let (_, accept) = self.params.thresholds();
        let total = self.model_tally.total;
        let status = if total >= self.model_accuse() {
            DimensionStatus::Mismatch
        } else if total <= accept {
            DimensionStatus::Consistent
        } else {
            DimensionStatus::Inconclusive
        };
        Some(DimensionVerdict {
            dimension: Dimension::Model,
            claimed: self.model.model.id.clone(),
            status,
            nearest: if status == DimensionStatus::Mismatch {
                "another model".into()
            } else {
                self.model.model.id.clone()
            },
            log_likelihood_ratio: Some(total),
            note: Some(self.model_tally.describe()),
            unseen: false,
        })
    }

    /// What the answers' format is, as far as the format evidence and the shapes tell: None
    /// without format references.
    pub fn format_identity(&self) -> Option<FormatIdentity> {
        let (formats, shapes) = (self.formats.as_ref()?, self.shapes.as_ref()?);
        let best = top_label(&self.format_totals)?;
        Some(shapes.identity(formats.formats()[best]))
    }

    /// Why the claimed format cannot be called consistent although its ratio says so: the
    /// answers lack the rounding pattern of the format that explains them best.
    fn format_blocked(&self) -> Option<String> {
        let identity = self.format_identity()?;
        (!identity.allows_consistent()).then(|| {
            format!(
                "the answers are {}: hspi cannot confirm the claimed format {} without a reference for what they are",
                identity.describe(),
                self.claim.get(Dimension::Format).unwrap_or("*")
            )
        })
    }

    /// Why the claimed format is not accused although the ratio rules out every format it covers:
    /// a quantised family's schemes differ in size and pattern (int8 is GGUF q8_0 and vLLM's
    /// W8A8 alike), so its known members stand for it only in part, and an honest provider of a
    /// scheme hspi has no reference for looks exactly so. Such a claim is accused only where the
    /// answers are firmly a known format outside the family. An exact format (`q8_0`) or a float
    /// family (`fp16`) is accused on the ratio alone.
    fn format_unaccused(&self) -> Option<String> {
        let family = self.claim.format_family().filter(|f| f.quantised())?;
        self.formats.as_ref()?;
        let identity = self.format_identity()?;
        let shapes = self.shapes.as_ref()?;
        // A member known by its size alone (W8A8: its activations rounded each engine's own way)
        // that the answers' size fits still stands for the family.
        let member_fits = self
            .formats
            .as_ref()?
            .formats()
            .iter()
            .any(|f| family.covers(*f) && shapes.fits_by_size(*f));
        if identity.firmly().is_some_and(|f| !family.covers(f)) && !member_fits {
            return None;
        }
        Some(format!(
            "the answers are not {} (the {family} hspi has references for) but {}: hspi cannot tell whether they are another {family} scheme without a reference for it",
            family_members(family, &self.model.classes).join(" or "),
            identity.describe()
        ))
    }

    /// The format evidence of an answer as the endpoint shows it: exact, or rounded to a grid
    /// (the references rounded the same way, the noise allowed to grow by the rounding of both).
    fn shown_format_scores(&self, record: &Record, shown: Presentation) -> Option<Vec<f64>> {
        let grid = match shown {
            Presentation::Rounded(grid) => Some(grid),
            Presentation::Exact => None,
            Presentation::TextOnly => return None,
        };
        let formats = self.formats.as_ref()?;
        let answer = View::of(&record.outputs);
        let rounding = match (&answer, grid) {
            (_, None) => 0.0,
            (View::Steps { steps, .. }, Some(grid)) => {
                let v: Vec<f64> = steps
                    .iter()
                    .flat_map(|s| s.top.iter().map(|(_, v)| grid.variance(*v)))
                    .collect();
                v.iter().sum::<f64>() / v.len().max(1) as f64
            }
            (View::Logits(_), _) => 0.0,
        };
        let views = self.references_shown(record, shown);
        let scores = formats.score(&answer, &views, FORMAT_CAP, 2.0 * rounding)?;
        Some(formats.class_scores(&scores, &self.model.classes))
    }

    /// Evidence from the generated text alone: a text equal to some classes' recomputation and
    /// not the others' weighs for them; the same text as every class, or no class's, weighs
    /// for none (the latter counts towards "unknown").
    fn text_evidence(&mut self, record: &Record) -> Weighed {
        let k = self.model.classes.len();
        let none = || vec![0.0; k];
        let Outputs::Completion { text, .. } = &record.outputs else {
            return ("text: no text", none(), Some(none()));
        };
        let views = self
            .refs
            .views(&record.probe_id, &self.model.spec.references);
        self.text_answers += 1;
        match self.texts.weigh(text, &views) {
            TextEvidence::NoReference => ("text: no reference", none(), Some(none())),
            TextEvidence::UnlikeEveryClass => {
                self.text_unlike += 1;
                ("text: unlike every class", none(), Some(none()))
            }
            TextEvidence::Weighed { ll, separates } => (
                if separates {
                    "text-match"
                } else {
                    "text: the same for every class"
                },
                ll.clone(),
                Some(ll),
            ),
        }
    }

    fn open_set_unknown(&self) -> Option<String> {
        if self.text_unlike >= self.params.min_queries && 2 * self.text_unlike > self.text_answers {
            let best = top_label(&self.cumulative).unwrap_or(0);
            return Some(format!(
                "{} of {} generated texts are unlike every known class's greedy text for the same prompt (nearest: {})",
                self.text_unlike,
                self.text_answers,
                self.model.classes[best].name()
            ));
        }
        if self.unreproduced >= self.params.min_queries {
            let best = top_label(&self.cumulative).unwrap_or(0);
            return Some(format!(
                "{} answers differ bit for bit from every known class's answer to the same probe, and every known class was measured to repeat its answers bit for bit (nearest: {})",
                self.unreproduced,
                self.model.classes[best].name()
            ));
        }
        if self.unmatched.len() < self.params.min_queries {
            return None;
        }
        let best = top_label(&self.cumulative).unwrap_or(0);
        let score = self
            .unmatched
            .iter()
            .map(|z| self.model.open_set.score(best, z))
            .sum::<f64>()
            / self.unmatched.len() as f64;
        (score > self.model.open_set.threshold).then(|| {
            format!(
                "{} answers lie {score:.2} from the nearest known class ({}), above the threshold {:.2}",
                self.unmatched.len(),
                self.model.classes[best].name(),
                self.model.open_set.threshold
            )
        })
    }

    /// The format's log-likelihood ratio (best class off the claimed format against the best on
    /// it): from the evidence that tolerates a change of hardware or build where the references
    /// cover every class's format, else from the classes' own. None when the claim leaves the
    /// format open or no reference has it.
    fn format_llr(&self) -> Option<f64> {
        if self.unreferenced.contains(&Dimension::Format) {
            return None;
        }
        let llr = dimension_llr(
            &self.claim,
            Dimension::Format,
            &self.model.classes,
            self.format_scores(),
        )?;
        // With format evidence of its own, the claim is weighed answer by answer against the
        // best format off it, whichever that is.
        Some(if self.formats.is_some() {
            self.format_claim
        } else {
            llr
        })
    }

    /// The threshold a format accusation needs: the format evidence's own where there is some,
    /// else Wald's (the format is then weighed on the classes' evidence).
    ///
    /// Where the claimed formats and the best format off the claim are all within a change of
    /// engine's reach (f32 claimed, f16 nearest), the evidence is a contest of directions at the
    /// scale of the noise itself, a random walk of small steps: two capped answers more. vLLM's
    /// fp32, a quarter of f16's rounding from llama.cpp's F32 but leaning a little its way, was
    /// otherwise accused as f16 in 1 of 200 audits of 256 tokens.
    fn format_accuse(&self) -> f64 {
        let Some(formats) = &self.formats else {
            return self.params.thresholds().0;
        };
        let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
        let claimed_fine = self
            .model
            .classes
            .iter()
            .zip(&on)
            .filter(|(_, on)| **on)
            .flat_map(|(c, _)| &c.members)
            .all(|m| within_engine_noise(m.format));
        let best_off = top_label(&self.format_totals).map(|i| formats.formats()[i]);
        let off_claim = self
            .model
            .classes
            .iter()
            .zip(&on)
            .filter(|(_, on)| !**on)
            .flat_map(|(c, _)| &c.members)
            .any(|m| Some(m.format) == best_off);
        if claimed_fine && off_claim && best_off.is_some_and(within_engine_noise) {
            self.params.format_accuse_threshold() + 2.0 * FORMAT_CAP
        } else {
            self.params.format_accuse_threshold()
        }
    }

    /// The per-class scores the format dimension is decided from.
    fn format_scores(&self) -> &[f64] {
        if self.formats.is_some() {
            &self.format_cumulative
        } else {
            &self.cumulative
        }
    }

    /// An accusation on the format alone. The likely class is the best off the claimed format by
    /// the format evidence, then by the classes' own; named as a platform where answers
    /// reproduced it bit for bit, else by its format alone (the format evidence decides nothing
    /// else), or as a format no reference covers where the answers lack its pattern.
    fn format_mismatch(&self) -> Verdict {
        let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
        let scores = self.format_scores();
        let best = (0..on.len())
            .filter(|c| !on[*c])
            .max_by(|a, b| {
                scores[*a]
                    .total_cmp(&scores[*b])
                    .then(self.cumulative[*a].total_cmp(&self.cumulative[*b]))
            })
            .unwrap_or(0);
        if self.formats.is_none() || self.reproduced.contains(&best) {
            return self.mismatch(best, vec![Dimension::Format]);
        }
        let (likely_class, likely_platform) = match self.format_identity() {
            Some(FormatIdentity::Known { format: f, .. }) => (
                self.model.classes[best].id.clone(),
                format!("*/*/{f}/* (the format; the evidence decides no other dimension)"),
            ),
            Some(identity) => (String::new(), identity.describe()),
            None => return self.mismatch(best, vec![Dimension::Format]),
        };
        Verdict::Mismatch {
            likely_class,
            likely_platform,
            dimensions: vec![Dimension::Format],
        }
    }

    /// The answers match no known class. The format, weighed by evidence that tolerates a change
    /// of hardware or build, may still be decided: a format mismatch is an accusation on that
    /// dimension; a consistent format leaves the rest unknown and the verdict inconclusive,
    /// because an honest provider on a stack hspi has no reference for looks exactly so.
    fn unknown(&self, reason: String) -> Verdict {
        let accept = self.params.thresholds().1;
        let accuse = self.format_accuse();
        match self.format_llr() {
            Some(v) if v >= accuse => match self.format_unaccused() {
                None => self.format_mismatch(),
                Some(why) => Verdict::Inconclusive {
                    reason: format!("{reason}; {why}"),
                },
            },
            Some(v) if v <= accept && self.format_blocked().is_some() => Verdict::Inconclusive {
                reason: format!(
                    "{reason}; {}",
                    self.format_blocked().expect("checked")
                ),
            },
            Some(v) if v <= accept => Verdict::Inconclusive {
                reason: format!(
                    "the claimed format {} is consistent (log-likelihood ratio {v:.2}), but {reason}: the other claimed dimensions are unknown",
                    self.claim.get(Dimension::Format).unwrap_or("*")
                ),
            },
            _ => Verdict::UnknownPlatform { reason },
        }
    }

    /// The most likely class among those `keep` admits.
    fn best_class(&self, keep: impl Fn(usize) -> bool) -> usize {
        (0..self.cumulative.len())
            .filter(|c| keep(*c))
            .max_by(|a, b| self.cumulative[*a].total_cmp(&self.cumulative[*b]))
            .unwrap_or(0)
    }

    fn mismatch(&self, class: usize, dimensions: Vec<Dimension>) -> Verdict {
        let class = &self.model.classes[class];
        Verdict::Mismatch {
            likely_class: class.id.clone(),
            likely_platform: class.name(),
            dimensions,
        }
    }

    /// The claimed dimensions the likely alternative class gets wrong and the evidence supports:
    /// where the format has evidence of its own that tolerates hardware differences, the format
    /// is accused only on that evidence (see [`Self::decide`]), never on the classes' alone.
    fn accused_dimensions(&self, best: usize) -> Vec<Dimension> {
        let members = &self.model.classes[best].members;
        Dimension::ALL
            .into_iter()
            .filter(|d| {
                members
                    .iter()
                    .all(|m| self.tested.mismatched(m).contains(d))
            })
            .filter(|d| !(self.formats.is_some() && *d == Dimension::Format))
            .collect()
    }

    /// Another model first (a format or platform of the wrong model means nothing), then the
    /// platform's dimensions, held while the model's evidence leans towards another model.
    fn decide(&self) -> Option<Verdict> {
        if self.evidence.len() >= self.params.min_queries {
            if let Some(v) = self.model_mismatch() {
                return Some(v);
            }
        }
        let v = self.decide_platform()?;
        if self.model_unsettled() && !matches!(v, Verdict::Tampered { .. }) {
            return None;
        }
        Some(v)
    }

    fn decide_platform(&self) -> Option<Verdict> {
        let n = self.evidence.len();
        if n < self.params.min_queries {
            return None;
        }
        if self.tampered.len() >= self.params.min_queries {
            return Some(Verdict::Tampered {
                reason: format!(
                    "{} of {n} answers hold values no known computation produces: {}",
                    self.tampered.len(),
                    self.tampered[0]
                ),
            });
        }
        let (accuse, accept) = self.params.thresholds();
        let format_accuse = self.format_accuse();
        let format = self.format_llr();
        if self.formats.is_some() && format.is_some_and(|v| v >= format_accuse) {
            let Some(why) = self.format_unaccused() else {
                return Some(self.format_mismatch());
            };
            // A scheme no reference covers settles nothing more with more answers.
            if self.format_identity().is_some_and(|i| i.is_unseen()) {
                return Some(Verdict::Inconclusive { reason: why });
            }
        }
        // The ratio finds the claimed format consistent, but the answers lack (or do not yet
        // show) the rounding pattern of the format that explains them: a format no reference
        // covers is never confirmed on the strength of its nearest known one.
        let blocked = self.formats.is_some()
            && format.is_some_and(|v| v <= accept)
            && self.format_blocked().is_some();
        let unseen = self.format_identity().is_some_and(|i| i.is_unseen());
        // The classes differ on nothing claimed but the format, which is settled.
        let format_decides = self.formats.is_some()
            && format.is_some_and(|v| v <= accept)
            && !blocked
            && self.only_format_differs();
        let llr = self.llr();
        if llr >= accuse || llr <= accept || format_decides {
            if let Some(reason) = self.open_set_unknown() {
                // The format evidence accumulates more slowly than the classes' (capped lower):
                // an unknown stack is settled once the format is, or the budget ends.
                let open =
                    format.is_some_and(|v| v > accept && v < format_accuse) || (blocked && !unseen);
                if self.formats.is_some() && open && self.can_continue(0) {
                    return None;
                }
                return Some(self.unknown(reason));
            }
        }
        if blocked && unseen {
            return Some(Verdict::Inconclusive {
                reason: self.format_blocked().expect("blocked"),
            });
        }
        if format_decides {
            return Some(self.consistent());
        }
        if llr >= accuse {
            let best = self.best_class(|c| !self.claimed.contains(&c));
            let dimensions = self.accused_dimensions(best);
            // The classes differ from the claim only on a format the format evidence does not
            // (yet) find wrong: ask more rather than accuse.
            if self.formats.is_some() && dimensions.is_empty() {
                return None;
            }
            return Some(self.mismatch(best, dimensions));
        }
        if self.formats.is_some() && format.is_some_and(|v| v > accept) || blocked {
            return None;
        }
        if llr <= accept {
            return Some(self.consistent());
        }
        None
    }

    /// Whether the known classes differ on no claimed dimension but the format (a dimension no
    /// class has a reference for is left out): then the format evidence alone decides.
    fn only_format_differs(&self) -> bool {
        self.tested
            .claimed()
            .into_iter()
            .filter(|d| *d != Dimension::Format)
            .all(|d| {
                dimension_llr(&self.tested, d, &self.model.classes, &self.cumulative).is_none()
            })
    }

    /// The claim holds on everything tested: consistent, or inconclusive where it names a value
    /// no known class has.
    fn consistent(&self) -> Verdict {
        if self.unreferenced.is_empty() {
            return Verdict::Consistent;
        }
        let open: Vec<String> = self
            .unreferenced
            .iter()
            .map(|d| format!("{d} {}", self.claim.get(*d).unwrap_or("*")))
            .collect();
        Verdict::Inconclusive {
            reason: format!(
                "the answers are consistent with {}, but no known class has the claimed {}: hspi can neither confirm nor refute that without a reference for it",
                self.tested,
                open.join(", ")
            ),
        }
    }

    /// Why text alone did not decide: which alternatives the texts ruled out, and which gave the
    /// claim's texts on every prompt asked.
    fn text_only_limits(&self) -> String {
        let (_, accept) = self.params.thresholds();
        let claim = self
            .claimed
            .iter()
            .map(|c| self.cumulative[*c])
            .fold(f64::NEG_INFINITY, f64::max);
        let (mut out, mut tied) = (Vec::new(), Vec::new());
        for c in (0..self.cumulative.len()).filter(|c| !self.claimed.contains(c)) {
            let name = self.model.classes[c].name();
            if self.cumulative[c] - claim <= accept {
                out.push(name);
            } else {
                tied.push(name);
            }
        }
        let list = |v: &[String]| {
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        };
        format!(
            "the endpoint shows text only; over {} queries ({} output tokens) the greedy texts rule out {} but cannot tell the claim from {} ({} texts like no known class's)",
            self.evidence.len(),
            self.tokens,
            list(&out),
            list(&tied),
            self.text_unlike
        )
    }

    /// Whether the budget allows another query of about `next_tokens` output tokens.
    pub fn can_continue(&self, next_tokens: u64) -> bool {
        self.verdict.is_none()
            && self.evidence.len() < self.params.max_queries
            && self.tokens + next_tokens <= self.params.max_output_tokens
    }

    pub fn finish(self) -> VerifyReport {
        let llr = self.llr();
        let (accuse, accept) = self.params.thresholds();
        // Unlike every known class when the budget ended while the format was still open.
        let unknown = (self.evidence.len() >= self.params.min_queries)
            .then(|| self.open_set_unknown())
            .flatten()
            .map(|reason| self.unknown(reason));
        // Leaning towards another model at the end: nothing about the platform is named.
        let unsettled = (self.verdict.is_none() && self.model_unsettled()).then(|| {
            Verdict::Inconclusive {
                reason: format!(
                    "the answers lean towards another model than {} (model log-likelihood ratio {:.2}, accusing at {:.2}; {}) within the budget ({} queries, {} output tokens): no format or platform is named for them",
                    self.model.model.id,
                    self.model_tally.total,
                    self.model_accuse(),
                    self.model_tally.describe(),
                    self.evidence.len(),
                    self.tokens
                ),
            }
        });
        let unknown = if unsettled.is_some() {
            unsettled
        } else {
            unknown
        };
        let verdict = self.verdict.clone().or(unknown).unwrap_or_else(|| Verdict::Inconclusive {
            reason: if self.evidence.is_empty() {
                "no answers to weigh".into()
            } else if let Some(why) = self
                .incomparable
                .as_ref()
                .filter(|_| self.evidence.iter().all(|e| e.method == "not comparable"))
            {
                why.clone()
            } else if self.coarsest == Presentation::TextOnly {
                self.text_only_limits()
            } else if let Some(why) = self
                .format_unaccused()
                .filter(|_| self.format_llr().is_some_and(|v| v >= self.format_accuse()))
                .or_else(|| {
                    self.format_blocked()
                        .filter(|_| self.format_llr().is_some_and(|v| v <= accept))
                })
            {
                format!(
                    "{why} (format log-likelihood ratio {:.2}; {} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.evidence.len(),
                    self.tokens
                )
            } else if llr >= accuse {
                format!(
                    "the answers are nearer a class off the claimed format than the claimed one (log-likelihood ratio {llr:.2}), but the format evidence that tolerates hardware and build differences does not find the format wrong (format log-likelihood ratio {:.2}, accusing at {:.2}) within the budget ({} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.format_accuse(),
                    self.evidence.len(),
                    self.tokens
                )
            } else if llr <= accept {
                format!(
                    "the answers are consistent with the claimed classes (log-likelihood ratio {llr:.2}), but the format evidence that tolerates hardware and build differences did not confirm the claimed format (format log-likelihood ratio {:.2}, consistent at {accept:.2}) within the budget ({} queries, {} output tokens)",
                    self.format_llr().unwrap_or(0.0),
                    self.evidence.len(),
                    self.tokens
                )
            } else {
                format!(
                    "the budget ({} queries, {} output tokens) ran out with the log-likelihood ratio at {llr:.2}, between {accept:.2} (consistent) and {accuse:.2} (mismatch)",
                    self.evidence.len(),
                    self.tokens
                )
            },
        });
        let confidence = match &verdict {
            Verdict::Consistent => 1.0 - self.params.false_acceptance,
            Verdict::Mismatch { .. } => 1.0 - self.params.false_accusation,
            Verdict::Tampered { .. } => 1.0,
            _ => 1.0 / (1.0 + (-llr.abs()).exp()),
        };
        let name = |c: usize| {
            format!(
                "{} {}",
                self.model.classes[c].id,
                self.model.classes[c].name()
            )
        };
        let identity = self.format_identity();
        let format = self.formats.as_ref().map(|_| FormatDecision {
            llr: self.format_llr(),
            nearest: identity
                .as_ref()
                .map(|i| i.nearest_known())
                .unwrap_or_default(),
            unseen: identity.as_ref().is_some_and(|i| i.is_unseen()),
            detail: identity
                .as_ref()
                .filter(|i| !matches!(i, FormatIdentity::Known { .. }))
                .map(|i| i.describe()),
            unconfirmed: self.format_blocked(),
            unaccused: self.format_unaccused(),
        });
        let mut dimensions = dimension_verdicts(
            &self.claim,
            &self.model.classes,
            &self.cumulative,
            format.as_ref(),
            Thresholds {
                accuse,
                accept,
                format_accuse: self.format_accuse(),
            },
            self.open_set_unknown().is_some(),
        );
        dimensions.extend(self.model_verdict());
        VerifyReport {
            presentation: (self.coarsest != Presentation::Exact).then(|| self.coarsest.describe()),
            dimensions,
            claim: self.claim.to_string(),
            claimed: self.claimed.iter().map(|c| name(*c)).collect(),
            alternatives: (0..self.model.classes.len())
                .filter(|c| !self.claimed.contains(c))
                .map(name)
                .collect(),
            classes: (0..self.model.classes.len()).map(name).collect(),
            verdict,
            confidence,
            log_likelihood_ratio: llr,
            thresholds: (accuse, accept),
            format_thresholds: self
                .formats
                .as_ref()
                .and(self.format_llr())
                .map(|_| (self.format_accuse(), accept)),
            queries: self.evidence.len(),
            output_tokens: self.tokens,
            evidence: self.evidence,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dimension_verdict::DimensionStatus;

    fn report(verdict: Verdict, statuses: &[DimensionStatus]) -> VerifyReport {
        VerifyReport {
            claim: "*/llamacpp/f16/*".into(),
            claimed: vec![],
            alternatives: vec![],
            classes: vec![],
            verdict,
            confidence: 0.5,
            log_likelihood_ratio: 0.0,
            thresholds: (4.6, -4.6),
            format_thresholds: None,
            queries: 8,
            output_tokens: 64,
            presentation: None,
            dimensions: statuses
                .iter()
                .map(|s| DimensionVerdict {
                    dimension: Dimension::Format,
                    claimed: "f16".into(),
                    status: *s,
                    nearest: "f16".into(),
                    log_likelihood_ratio: None,
                    note: None,
                    unseen: false,
                })
                .collect(),
            evidence: vec![],
        }
    }

    #[test]
    fn the_exit_code_follows_the_worst_claimed_dimension() {
        use DimensionStatus::*;
        let inconclusive = || Verdict::Inconclusive {
            reason: "budget".into(),
        };
        assert_eq!(report(Verdict::Consistent, &[Consistent]).exit_code(), 0);
        assert_eq!(report(inconclusive(), &[Consistent]).exit_code(), 3);
        assert_eq!(
            report(inconclusive(), &[Consistent, Mismatch]).exit_code(),
            1
        );
        assert_eq!(
            report(inconclusive(), &[Unknown, Inconclusive]).exit_code(),
            4
        );
        assert_eq!(report(inconclusive(), &[Unknown, Mismatch]).exit_code(), 1);
        assert_eq!(report(Verdict::Consistent, &[Inconclusive]).exit_code(), 3);
        assert_eq!(report(inconclusive(), &[]).exit_code(), 3);
    }
}
