//! Identification of one target from its answers: the exact-match path when every probe was seen
//! in training, otherwise the classifier's posterior summed over queries, with open-set rejection.

use hspi_datasets::top_label;
use hspi_datasets::{Dimension, Presentation, Record};
use serde::{Deserialize, Serialize};

use crate::dimension_verdict::shown;
use crate::exact::Lookup;
use crate::features::View;
use crate::linear::{log_softmax, standardise};
use crate::model::PlatformModel;
use crate::references::{feature_matrix, ReferenceIndex};
use crate::sources::format_evidence::{FormatReferences, FORMAT_CAP};
use crate::sources::format_identity::FormatShapes;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassProbability {
    pub class: String,
    pub name: String,
    pub probability: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Decision {
    Identified {
        class: String,
        name: String,
    },
    /// Several classes answer these probes identically.
    OneOf {
        classes: Vec<String>,
    },
    Unknown {
        reason: String,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Identification {
    pub target: String,
    /// The platform label the records carry, when they carry one (evaluation).
    pub label: Option<String>,
    pub queries: usize,
    pub output_tokens: u64,
    /// `exact-match` (probes seen in training), `reference-match` (bit-identical to hspi's own
    /// recomputation on a reference platform) or `classifier`.
    pub method: String,
    pub decision: Decision,
    /// Most probable first.
    pub posterior: Vec<ClassProbability>,
    /// Open-set score against the chosen class and the threshold above which it is unknown.
    pub open_set_score: Option<f64>,
    pub open_set_threshold: f64,
    /// Queries whose probe no reference platform answered (their features are blind).
    pub without_references: usize,
    /// Per dimension, the value of the most probable class (for an unknown platform: the
    /// nearest known value of each dimension); a format also with its family.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nearest: Vec<(Dimension, String)>,
    /// Per format, the summed evidence that tolerates a change of hardware or build (nats over
    /// the widest reference format; see `format_evidence`), when the references cover every
    /// class's format: the nearest format is read from it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub format_evidence: Vec<(String, f64)>,
}

impl Identification {
    /// The answers fit no known class ("unknown platform", exit 1).
    pub fn is_unknown(&self) -> bool {
        matches!(self.decision, Decision::Unknown { .. })
    }

    pub fn class(&self) -> Option<&str> {
        match &self.decision {
            Decision::Identified { class, .. } => Some(class),
            _ => None,
        }
    }
}

/// Most log-likelihood one answer contributes (nats): the verifier's default cap.
pub const PER_QUERY_CAP: f64 = 3.0;

pub fn output_tokens(r: &Record) -> u64 {
    r.usage.as_ref().map_or_else(
        || match View::of(&r.outputs) {
            View::Steps { steps, .. } => steps.len() as u64,
            View::Logits(_) => 0,
        },
        |u| u.completion_tokens,
    )
}

/// One query scored once, for the classifier path and the format evidence alike.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    /// Log posterior over the model's classes.
    pub log_proba: Vec<f64>,
    /// Standardised features (the open-set vector).
    pub z: Vec<f64>,
    /// Per format of [`FormatReferences::formats`], the answer's format evidence (None without
    /// format references, or when the widest reference did not answer its probe).
    pub format: Option<Vec<f64>>,
}

impl PlatformModel {
    /// The references that stand for each format, when they cover every class's format.
    pub fn format_references(&self) -> Option<FormatReferences> {
        FormatReferences::new(&self.spec.references, &self.classes)
    }

    /// Per-query log posteriors, open-set vectors and format evidence.
    pub fn score_records(&self, records: &[&Record], refs: &ReferenceIndex) -> Vec<Scored> {
        let x = feature_matrix(&self.spec, records, refs);
        let z = standardise(&x, &self.linear.mean, &self.linear.scale);
        let formats = self.format_references();
        x.rows()
            .into_iter()
            .zip(z.rows())
            .zip(records)
            .map(|((row, zr), r)| Scored {
                log_proba: self.linear.log_proba(&row.to_vec()),
                z: zr.to_vec(),
                format: formats.as_ref().and_then(|f| {
                    let views = refs.views(&r.probe_id, &self.spec.references);
                    f.score(&View::of(&r.outputs), &views, FORMAT_CAP, 0.0)
                }),
            })
            .collect()
    }

    /// Identify from already scored queries (so evaluation can reuse one scoring pass).
    pub fn decide(
        &self,
        records: &[&Record],
        scored: &[&Scored],
        refs: &ReferenceIndex,
    ) -> Identification {
        let mut id = self.decide_class(records, scored, refs);
        if let Some(class) = id
            .posterior
            .first()
            .and_then(|p| self.classes.iter().find(|c| c.id == p.class))
        {
            id.nearest = Dimension::ALL
                .into_iter()
                .filter_map(|d| class.members.first().map(|m| (d, shown(d, m))))
                .collect();
        }
        // Answers reproduced bit for bit name their format exactly; the others by the evidence
        // that tolerates a change of hardware or build.
        let formats = self
            .format_references()
            .filter(|_| id.method == "classifier");
        if let Some(formats) = formats {
            let mut total = vec![0.0; formats.formats().len()];
            for s in scored.iter().filter_map(|s| s.format.as_ref()) {
                total.iter_mut().zip(s).for_each(|(t, v)| *t += v);
            }
            let format = formats.formats()[top_label(&total).unwrap_or(0)];
            // Named only where the answers carry that format's own rounding, never as a known
            // format they are not (`format_identity`).
            let mut shapes = FormatShapes::new(formats.formats());
            for r in records {
                let views = refs.views(&r.probe_id, &self.spec.references);
                let by_format: Vec<Option<&View>> = formats
                    .reference_indices()
                    .map(|i| views.get(i).and_then(Option::as_ref))
                    .collect();
                shapes.add(&View::of(&r.outputs), &by_format);
            }
            let shown_format = shapes.identity(format).nearest_known();
            match id.nearest.iter_mut().find(|(d, _)| *d == Dimension::Format) {
                Some(entry) => entry.1 = shown_format,
                None => id.nearest.push((Dimension::Format, shown_format)),
            }
            id.format_evidence = formats
                .formats()
                .iter()
                .map(ToString::to_string)
                .zip(total)
                .collect();
        }
        id
    }

    fn decide_class(
        &self,
        records: &[&Record],
        scored: &[&Scored],
        refs: &ReferenceIndex,
    ) -> Identification {
        let target = records
            .first()
            .map(|r| r.target.clone())
            .unwrap_or_default();
        let label = records
            .first()
            .and_then(|r| r.platform.as_ref())
            .map(ToString::to_string);
        let output_tokens = records.iter().map(|r| output_tokens(r)).sum();
        let blind = if self.spec.kinds.iter().any(|k| k.needs_references()) {
            records
                .iter()
                .filter(|r| refs.coverage(&r.probe_id, &self.spec.references) == 0)
                .count()
        } else {
            0
        };
        let mut out = Identification {
            target,
            label,
            queries: records.len(),
            output_tokens,
            method: String::new(),
            decision: Decision::Unknown {
                reason: "no queries".into(),
            },
            posterior: Vec::new(),
            open_set_score: None,
            open_set_threshold: self.open_set.threshold,
            without_references: 0,
            nearest: Vec::new(),
            format_evidence: Vec::new(),
        };
        if records.is_empty() {
            return out;
        }
        // Answers shown rounded or as text alone are compared with the references shown the
        // same way; the classifier, trained on exact values, never sees them.
        let presentation = shown_as(records);
        if presentation != Presentation::Exact {
            let matches = self.reference_matches(records, refs, presentation);
            out.method = format!("reference-match ({})", presentation.describe());
            out.posterior = self.uniform(matches.as_deref().unwrap_or_default());
            out.decision = match matches.as_deref() {
                None | Some([]) => Decision::Unknown {
                    reason: format!(
                        "shown as {}, the answers match no class's recomputation shown the same way",
                        presentation.describe()
                    ),
                },
                Some([one]) => Decision::Identified {
                    class: self.classes[*one].id.clone(),
                    name: self.classes[*one].name(),
                },
                Some(many) => Decision::OneOf {
                    classes: many.iter().map(|c| self.classes[*c].id.clone()).collect(),
                },
            };
            return out;
        }
        let exact = self
            .exact_matches(records)
            .map(|m| ("exact-match", m))
            .or_else(|| {
                self.reference_matches(records, refs, Presentation::Exact)
                    .map(|m| ("reference-match", m))
            });
        if let Some((method, matches)) = exact {
            out.method = method.into();
            out.posterior = self.uniform(&matches);
            out.decision = match matches.as_slice() {
                [] => Decision::Unknown {
                    reason: format!(
                        "the answers to {} probes seen in training match no known class bit for bit",
                        records.len()
                    ),
                },
                [one] => Decision::Identified {
                    class: self.classes[*one].id.clone(),
                    name: self.classes[*one].name(),
                },
                many => Decision::OneOf {
                    classes: many.iter().map(|c| self.classes[*c].id.clone()).collect(),
                },
            };
            return out;
        }
        // Without a classifier (references computed for a fresh audit) the format evidence
        // weighs the classes.
        let formats = self.format_references().filter(|_| !self.has_classifier());
        out.method = if formats.is_some() {
            "format-evidence"
        } else {
            "classifier"
        }
        .into();
        out.without_references = blind;
        let without_references = blind;
        let mut total = vec![0.0; self.classes.len()];
        for s in scored {
            let lp = match (&formats, &s.format) {
                (Some(f), Some(scores)) => f.class_scores(scores, &self.classes),
                (Some(_), None) => vec![0.0; self.classes.len()],
                (None, _) => s.log_proba.clone(),
            };
            for (t, v) in total.iter_mut().zip(&lp) {
                *t += v;
            }
        }
        let post = log_softmax(&total);
        let best = top_label(&post).unwrap_or(0);
        let score = scored
            .iter()
            .map(|s| self.open_set.score(best, &s.z))
            .sum::<f64>()
            / scored.len() as f64;
        out.open_set_score = Some(score);
        let mut posterior: Vec<ClassProbability> = post
            .iter()
            .enumerate()
            .map(|(i, lp)| ClassProbability {
                class: self.classes[i].id.clone(),
                name: self.classes[i].name(),
                probability: lp.exp(),
            })
            .collect();
        posterior.sort_by(|a, b| b.probability.total_cmp(&a.probability));
        out.posterior = posterior;
        let reference_class = self.reference_classes();
        let unreproduced = records
            .iter()
            .filter(|r| {
                !self
                    .ruled_out(r, refs, &reference_class, Presentation::Exact)
                    .contains(&false)
            })
            .count();
        out.decision = if unreproduced > 0 && 2 * unreproduced >= records.len() {
            Decision::Unknown {
                reason: format!(
                    "{unreproduced} of {} answers differ bit for bit from every known class's answer to the same probe, and every known class was measured to repeat its answers bit for bit",
                    records.len()
                ),
            }
        } else if score > self.open_set.threshold {
            Decision::Unknown {
                reason: format!(
                    "answers lie {score:.2} from the nearest class profile ({}), above the threshold {:.2}",
                    self.classes[best].id, self.open_set.threshold
                ),
            }
        } else if without_references == records.len() {
            Decision::Unknown {
                reason: "no reference answers for any queried probe: recompute them locally first"
                    .into(),
            }
        } else {
            Decision::Identified {
                class: self.classes[best].id.clone(),
                name: self.classes[best].name(),
            }
        };
        out
    }

    pub fn identify(&self, records: &[&Record], refs: &ReferenceIndex) -> Identification {
        // Answers settled bit for bit need no features: extract them only for the classifier.
        let bitwise = shown_as(records) != Presentation::Exact
            || self.exact_matches(records).is_some()
            || self
                .reference_matches(records, refs, Presentation::Exact)
                .is_some();
        let scored = if bitwise {
            Vec::new()
        } else {
            self.score_records(records, refs)
        };
        let refs_scored: Vec<&Scored> = scored.iter().collect();
        self.decide(records, &refs_scored, refs)
    }

    /// Classes identical on every query, when every query's probe was seen in training.
    fn exact_matches(&self, records: &[&Record]) -> Option<Vec<usize>> {
        let mut common: Option<Vec<usize>> = None;
        for r in records {
            match self.exact.lookup(r) {
                Lookup::Unseen => return None,
                Lookup::Matches(m) => {
                    common = Some(match common {
                        None => m,
                        Some(c) => c.into_iter().filter(|x| m.contains(x)).collect(),
                    });
                }
            }
        }
        common
    }

    /// Classes whose reference platform recomputed every query bit for bit (local
    /// recomputation of unseen probes: the exact path without training on them).
    fn reference_matches(
        &self,
        records: &[&Record],
        refs: &ReferenceIndex,
        presentation: Presentation,
    ) -> Option<Vec<usize>> {
        let reference_class = self.reference_classes();
        let mut common: Option<Vec<usize>> = None;
        for r in records {
            let classes: Vec<usize> = refs
                .identical_as(r, presentation)
                .iter()
                .filter_map(|p| reference_class.get(p).copied())
                .collect();
            let next: Vec<usize> = match common {
                None => classes,
                Some(c) => c.into_iter().filter(|x| classes.contains(x)).collect(),
            };
            if next.is_empty() {
                return None;
            }
            common = Some(next);
        }
        common.map(|mut c| {
            c.sort_unstable();
            c.dedup();
            c
        })
    }

    fn uniform(&self, classes: &[usize]) -> Vec<ClassProbability> {
        classes
            .iter()
            .map(|c| ClassProbability {
                class: self.classes[*c].id.clone(),
                name: self.classes[*c].name(),
                probability: 1.0 / classes.len() as f64,
            })
            .collect()
    }
}

/// How a set of answers is shown: the coarsest presentation any of them shows.
pub fn shown_as(records: &[&Record]) -> Presentation {
    records
        .iter()
        .filter_map(|r| Presentation::detect(&r.outputs))
        .max_by_key(|p| p.coarseness())
        .unwrap_or_default()
}
