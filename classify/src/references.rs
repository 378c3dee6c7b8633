//! hspi's own answers to the probes (local recomputation on each reference platform), indexed
//! by probe, and the feature matrix of a set of answers described against them.

use std::collections::{BTreeSet, HashMap};

use hspi_datasets::{AskedAs, Presentation, Record};
use ndarray::Array2;

use crate::features::{FeatureKind, FeatureSpec, View};

#[derive(Debug, Clone, Default)]
pub struct ReferenceIndex {
    by_probe: HashMap<String, HashMap<String, View>>,
    /// probe → output hash → reference platforms that answered exactly that.
    hashes: HashMap<String, HashMap<String, Vec<String>>>,
    platforms: BTreeSet<String>,
    /// probe → how the references to it were asked: answers asked one way are compared only
    /// with references asked the same way.
    asked: HashMap<String, BTreeSet<AskedAs>>,
}

impl ReferenceIndex {
    /// Platform-labelled records become references; unlabelled ones (an endpoint) are skipped.
    pub fn new<'a>(records: impl IntoIterator<Item = &'a Record>) -> ReferenceIndex {
        let mut index = ReferenceIndex::default();
        for r in records {
            index.add(r);
        }
        index
    }

    /// Add one reference answer (skipped without a platform label).
    pub fn add(&mut self, r: &Record) {
        let Some(p) = &r.platform else { return };
        let p = p.to_string();
        self.by_probe
            .entry(r.probe_id.clone())
            .or_default()
            .insert(p.clone(), View::of(&r.outputs));
        self.hashes
            .entry(r.probe_id.clone())
            .or_default()
            .entry(crate::exact::output_hash(r))
            .or_default()
            .push(p.clone());
        self.platforms.insert(p);
        self.asked
            .entry(r.probe_id.clone())
            .or_default()
            .insert(r.asked_as());
    }

    /// How the references to this probe were asked (empty without references).
    pub fn asked(&self, probe: &str) -> Vec<AskedAs> {
        self.asked
            .get(probe)
            .map(|a| a.iter().copied().collect())
            .unwrap_or_default()
    }

    pub fn platforms(&self) -> Vec<String> {
        self.platforms.iter().cloned().collect()
    }

    /// The reference answers to one probe, in the given platform order.
    pub fn views(&self, probe: &str, platforms: &[String]) -> Vec<Option<View>> {
        let answers = self.by_probe.get(probe);
        platforms
            .iter()
            .map(|p| answers.and_then(|a| a.get(p)).cloned())
            .collect()
    }

    /// Reference platforms whose answer to this record's probe is bit-identical to it.
    pub fn identical(&self, record: &Record) -> &[String] {
        self.hashes
            .get(&record.probe_id)
            .and_then(|h| h.get(&crate::exact::output_hash(record)))
            .map_or(&[], Vec::as_slice)
    }

    /// Reference platforms whose answer to this record's probe the endpoint would show as it
    /// shows this record (bit-identical once both are rounded to its grid, or the same text).
    pub fn identical_as(&self, record: &Record, presentation: Presentation) -> Vec<String> {
        if presentation == Presentation::Exact {
            return self.identical(record).to_vec();
        }
        let answer = View::of(&record.outputs).shown(presentation);
        let Some(answers) = self.by_probe.get(&record.probe_id) else {
            return Vec::new();
        };
        let mut same: Vec<String> = answers
            .iter()
            .filter(|(_, v)| v.shown(presentation).same(&answer))
            .map(|(p, _)| p.clone())
            .collect();
        same.sort_unstable();
        same
    }

    /// Whether `platform` answered this probe among the references.
    pub fn answered(&self, probe: &str, platform: &str) -> bool {
        self.by_probe
            .get(probe)
            .is_some_and(|a| a.contains_key(platform))
    }

    /// How many of the spec's references answered this probe.
    pub fn coverage(&self, probe: &str, platforms: &[String]) -> usize {
        self.views(probe, platforms).iter().flatten().count()
    }
}

/// A spec fitted to the data: white-box or black-box from the records, widths from their sizes.
pub fn infer_spec(
    kinds: Vec<FeatureKind>,
    records: &[&Record],
    references: Vec<String>,
) -> FeatureSpec {
    let views: Vec<View> = records
        .iter()
        .take(256)
        .map(|r| View::of(&r.outputs))
        .collect();
    let logits = views.iter().any(|v| matches!(v, View::Logits(_)));
    let (steps, width) = if logits {
        let n = views
            .iter()
            .map(|v| match v {
                View::Logits(l) => l.len(),
                View::Steps { .. } => 0,
            })
            .max()
            .unwrap_or(0);
        (1, n.min(16))
    } else {
        views.iter().fold((0, 0), |(s, w), v| match v {
            View::Steps { steps, .. } => (
                s.max(steps.len()),
                w.max(steps.iter().map(|st| st.top.len()).max().unwrap_or(0)),
            ),
            View::Logits(_) => (s, w),
        })
    };
    FeatureSpec {
        kinds,
        output_kind: if logits { "logits" } else { "steps" }.into(),
        steps,
        width,
        references,
    }
}

/// One feature row per record.
pub fn feature_matrix(
    spec: &FeatureSpec,
    records: &[&Record],
    refs: &ReferenceIndex,
) -> Array2<f64> {
    let dim = spec.dim();
    let mut data = Vec::with_capacity(records.len() * dim);
    for r in records {
        let answer = View::of(&r.outputs);
        data.extend(spec.extract(&answer, &refs.views(&r.probe_id, &spec.references)));
    }
    Array2::from_shape_vec((records.len(), dim), data).expect("every row has spec.dim() values")
}
