//! A trained platform model: feature spec, classes (EQCs), linear model, open-set profiles and the
//! exact-match index, persisted as one JSON file that refuses records it was not trained for.

pub mod determinism;
pub mod open_set;

use std::path::Path;

use hspi_datasets::manifest::ModelInfo;
use hspi_datasets::{short_id, Platform, Presentation, Record};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::eqc::group_eqcs;
use crate::error::ClassifyError;
use crate::exact::ExactIndex;
use crate::features::{FeatureKind, FeatureSpec, View};
use crate::integrity::IntegrityProfile;
use crate::linear::{self, LinearModel, TrainParams, Validation};
use crate::model::open_set::OpenSet;
use crate::references::{feature_matrix, infer_spec, ReferenceIndex};

pub const FORMAT: &str = "hspi-platform-model/1";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassLabel {
    /// The EQC id in the training data (`E1`, `E2`, …).
    pub id: String,
    /// Its member platforms.
    pub members: Vec<Platform>,
    /// How its answers repeated when collected twice (absent: not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<crate::model::determinism::RepeatCheck>,
}

impl ClassLabel {
    /// Measured to answer bit for bit the same when asked again.
    pub fn deterministic(&self) -> bool {
        self.repeats.is_some_and(|r| r.deterministic())
    }

    pub fn name(&self) -> String {
        match self.members.as_slice() {
            [one] => one.to_string(),
            [first, rest @ ..] => format!("{first} (+{} more)", rest.len()),
            [] => self.id.clone(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlatformModel {
    pub format: String,
    /// sha256 of the file's content with this field empty (first 16 hex digits).
    pub id: String,
    pub model: ModelInfo,
    pub probe_set_hash: String,
    pub spec: FeatureSpec,
    pub classes: Vec<ClassLabel>,
    pub linear: LinearModel,
    pub open_set: OpenSet,
    pub exact: ExactIndex,
    pub validation: Validation,
    pub samples: usize,
    /// Per class, the integrity properties its answers keep (black-box answers only).
    #[serde(default)]
    pub integrity: Vec<IntegrityProfile>,
}

pub struct TrainInput<'a> {
    pub records: &'a [Record],
    pub model: ModelInfo,
    pub probe_set_hash: String,
    pub references: &'a ReferenceIndex,
    /// Reference platforms in feature order (default: every platform the references hold).
    pub reference_platforms: Option<Vec<String>>,
    pub kinds: Vec<FeatureKind>,
    pub params: TrainParams,
    /// Answers collected a second time to some of `records`' probes on the same platforms: which
    /// classes repeat bit for bit (empty: not measured).
    pub repeats: &'a [Record],
}

impl PlatformModel {
    /// The class of each reference platform of the spec (by its string form, as reference lists
    /// keep it); computed once per verifier or identification, not per answer.
    pub fn reference_classes(&self) -> std::collections::HashMap<String, usize> {
        let member_class: std::collections::HashMap<String, usize> = self
            .classes
            .iter()
            .enumerate()
            .flat_map(|(c, class)| class.members.iter().map(move |m| (m.to_string(), c)))
            .collect();
        self.spec
            .references
            .iter()
            .filter_map(|r| member_class.get(r).map(|c| (r.clone(), *c)))
            .collect()
    }

    /// Per class, whether this answer rules it out: the class was measured to repeat bit for
    /// bit, its own answer to the probe is known (among the references or in training), and this
    /// answer is not bit-identical to it. Never for classes that vary (batched under load).
    pub fn ruled_out(
        &self,
        record: &Record,
        refs: &ReferenceIndex,
        reference_class: &std::collections::HashMap<String, usize>,
        presentation: Presentation,
    ) -> Vec<bool> {
        // Training answers are exact: they settle nothing about a rounded answer.
        let exact = presentation == Presentation::Exact;
        let trained = self.exact.probes.get(&record.probe_id).filter(|_| exact);
        let mut matched: Vec<usize> = match self.exact.lookup(record) {
            crate::exact::Lookup::Matches(m) if exact => m,
            _ => Vec::new(),
        };
        matched.extend(
            refs.identical_as(record, presentation)
                .iter()
                .filter_map(|p| reference_class.get(p).copied()),
        );
        (0..self.classes.len())
            .map(|c| {
                let known = reference_class
                    .iter()
                    .any(|(p, cls)| *cls == c && refs.answered(&record.probe_id, p))
                    || trained.is_some_and(|a| a.values().any(|cs| cs.contains(&c)));
                self.classes[c].deterministic() && known && !matched.contains(&c)
            })
            .collect()
    }

    pub fn train(input: TrainInput) -> Result<PlatformModel, ClassifyError> {
        input.params.validate()?;
        if input.kinds.is_empty() {
            return Err(ClassifyError::NoFeatureExtractor);
        }
        let labelled: Vec<&Record> = input
            .records
            .iter()
            .filter(|r| r.platform.is_some())
            .collect();
        if labelled.is_empty() {
            return Err(ClassifyError::NothingToTrainOn);
        }
        let grouping = group_eqcs(labelled.iter().copied())?;
        let mut classes: Vec<ClassLabel> = grouping
            .eqcs
            .iter()
            .map(|e| ClassLabel {
                id: e.id.clone(),
                members: e.members.clone(),
                repeats: None,
            })
            .collect();
        let members: Vec<&[Platform]> = classes.iter().map(|c| c.members.as_slice()).collect();
        let checks =
            crate::model::determinism::repeat_checks(&members, input.records, input.repeats);
        for (class, check) in classes.iter_mut().zip(checks) {
            class.repeats = check;
        }
        let class_of = |r: &Record| {
            classes
                .iter()
                .position(|c| r.platform.as_ref().is_some_and(|p| c.members.contains(p)))
                .unwrap_or(0)
        };
        let reference_platforms = input
            .reference_platforms
            .unwrap_or_else(|| input.references.platforms());
        let needs = input.kinds.iter().find(|k| k.needs_references());
        if let (Some(k), true) = (needs, reference_platforms.is_empty()) {
            return Err(ClassifyError::FeatureNeedsReferences {
                feature: k.to_string(),
            });
        }
        // Extractors that read no reference must not make identification ask for them.
        let reference_platforms = if needs.is_some() {
            reference_platforms
        } else {
            Vec::new()
        };
        let spec = infer_spec(input.kinds, &labelled, reference_platforms);
        let x = feature_matrix(&spec, &labelled, input.references);
        let y: Vec<usize> = labelled.iter().map(|r| class_of(r)).collect();
        let groups: Vec<String> = labelled.iter().map(|r| r.probe_id.clone()).collect();
        let (linear, validation) = linear::train(&x, &y, &groups, classes.len(), &input.params)?;
        let z = linear::standardise(&x, &linear.mean, &linear.scale);
        let folds = linear::folds_by_group(&groups, input.params.folds);
        let open_set = OpenSet::calibrate(&z, &y, &folds, classes.len());
        let exact = ExactIndex::build(labelled.iter().map(|r| (*r, class_of(r))));
        let integrity = (0..classes.len())
            .map(|c| IntegrityProfile::of(labelled.iter().copied().filter(|r| class_of(r) == c)))
            .collect();
        let mut model = PlatformModel {
            format: FORMAT.into(),
            id: String::new(),
            model: input.model,
            probe_set_hash: input.probe_set_hash,
            spec,
            classes,
            linear,
            open_set,
            exact,
            validation,
            samples: labelled.len(),
            integrity,
        };
        model.id = model.content_id();
        Ok(model)
    }

    /// Whether a trained classifier scores answers (not a references-only model).
    pub fn has_classifier(&self) -> bool {
        !self.spec.kinds.is_empty()
    }

    /// A model without a classifier: one class per platform whose references an audit computes
    /// for its own prompts (teacher forcing), answered as top-`width` logprob steps. Only the
    /// evidence that reads those references weighs an answer (the format evidence, the model
    /// evidence); the classifier part scores every class alike and flags nothing as unknown.
    pub fn references_only(
        model: ModelInfo,
        platforms: &[Platform],
        width: usize,
    ) -> PlatformModel {
        let k = platforms.len();
        let classes: Vec<ClassLabel> = platforms
            .iter()
            .enumerate()
            .map(|(i, p)| ClassLabel {
                id: format!("R{}", i + 1),
                members: vec![p.clone()],
                repeats: None,
            })
            .collect();
        let mut model = PlatformModel {
            format: FORMAT.into(),
            id: String::new(),
            model,
            probe_set_hash: String::new(),
            spec: FeatureSpec {
                kinds: Vec::new(),
                output_kind: "steps".into(),
                steps: 0,
                width,
                references: platforms.iter().map(ToString::to_string).collect(),
            },
            classes,
            linear: LinearModel {
                mean: Vec::new(),
                scale: Vec::new(),
                weights: vec![Vec::new(); k],
                intercept: vec![0.0; k],
                alpha: 0.0,
            },
            open_set: OpenSet {
                profiles: vec![
                    Some(crate::model::open_set::Profile {
                        mean: Vec::new(),
                        spread: Vec::new(),
                    });
                    k
                ],
                threshold: 1.0,
                known_rejected: 0.0,
                unknown_accepted: 0.0,
            },
            exact: ExactIndex::default(),
            validation: Validation {
                alpha: 0.0,
                scores: Vec::new(),
            },
            samples: 0,
            integrity: Vec::new(),
        };
        model.id = model.content_id();
        model
    }

    fn content_id(&self) -> String {
        let mut copy = self.clone();
        copy.id.clear();
        let bytes = serde_json::to_vec(&copy).unwrap_or_default();
        hex::encode(&Sha256::digest(bytes)[..8])
    }

    pub fn save(&self, path: &Path) -> Result<(), ClassifyError> {
        let file_err = |reason: String| ClassifyError::ModelFile {
            path: path.display().to_string(),
            reason,
        };
        let json = serde_json::to_vec(self).map_err(|e| file_err(e.to_string()))?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, json).map_err(|e| file_err(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| file_err(e.to_string()))
    }

    pub fn load(path: &Path) -> Result<PlatformModel, ClassifyError> {
        let file_err = |reason: String| ClassifyError::ModelFile {
            path: path.display().to_string(),
            reason,
        };
        let bytes = std::fs::read(path).map_err(|e| file_err(e.to_string()))?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| file_err(format!("not JSON ({e})")))?;
        let format = value.get("format").and_then(|f| f.as_str()).unwrap_or("");
        if format != FORMAT {
            return Err(file_err(format!(
                "format '{format}' is not {FORMAT}\nhint: train it again with `hspi train`"
            )));
        }
        let model: PlatformModel =
            serde_json::from_value(value).map_err(|e| file_err(format!("malformed ({e})")))?;
        if model.content_id() != model.id {
            return Err(file_err(format!(
                "content does not match its id {} (the file was altered)",
                model.id
            )));
        }
        if model.linear.weights.len() != model.classes.len()
            || model.linear.mean.len() != model.spec.dim()
        {
            return Err(file_err("weights do not fit its feature spec".into()));
        }
        Ok(model)
    }

    /// Refuse records from another model or of another output kind: features would be nonsense.
    pub fn check_compatible(
        &self,
        model: &ModelInfo,
        records: &[&Record],
    ) -> Result<(), ClassifyError> {
        // Without a classifier (references a fresh audit computed) nothing was trained on the
        // records' weights: the model's name suffices.
        let weights_differ =
            self.has_classifier() && model.weights_sha256 != self.model.weights_sha256;
        if !model.id.eq_ignore_ascii_case(&self.model.id) || weights_differ {
            return Err(ClassifyError::Mismatch(format!(
                "this classifier was trained on model {} (weights {}), the records are from {} (weights {})\nhint: train on a dataset of the same model",
                self.model.id,
                short_id(&self.model.weights_sha256),
                model.id,
                short_id(&model.weights_sha256)
            )));
        }
        if let Some(r) = records.first() {
            let kind = match View::of(&r.outputs) {
                View::Logits(_) => "logits",
                View::Steps { .. } => "steps",
            };
            if kind != self.spec.output_kind {
                return Err(ClassifyError::Mismatch(format!(
                    "this classifier reads {} but record {} holds {kind}",
                    self.spec.output_kind, r.probe_id
                )));
            }
        }
        Ok(())
    }
}
