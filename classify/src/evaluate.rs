//! Paper-style evaluation: accuracy and confusion per EQC on held-out probes, accuracy against
//! the number of queries, the exact-match path on replayed probes, unknown-class rejection with
//! each class held out, cross-model transfer, and the random-guess and HSPI-feature baselines.

use std::collections::BTreeMap;

use hspi_datasets::{Dimension, PlatformPattern, Record};
use rand::seq::IndexedRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::dimension_verdict::shown;
use crate::error::ClassifyError;
use crate::features::FeatureKind;
use crate::identify::{Identification, Scored};
use crate::linear::TrainParams;
use crate::model::{ClassLabel, PlatformModel, TrainInput};
use crate::references::ReferenceIndex;

pub struct EvalInput<'a> {
    pub train: &'a [Record],
    pub test: &'a [Record],
    pub model: hspi_datasets::manifest::ModelInfo,
    pub probe_set_hash: String,
    /// Reference answers for the training and the test probes.
    pub references: &'a ReferenceIndex,
    pub reference_platforms: Option<Vec<String>>,
    pub kinds: Vec<FeatureKind>,
    /// HSPI's own features, evaluated beside (no references).
    pub baseline_kinds: Vec<FeatureKind>,
    pub params: TrainParams,
    pub queries: Vec<usize>,
    pub seed: u64,
    /// Classes held out one at a time for the unknown-rejection table (at most this many).
    pub max_held_out: usize,
    /// Instead: the classes with a member matching this pattern, held out together (a whole
    /// instruction set, say, as when the provider's hardware is one hspi has no answers from).
    pub hold_out: Option<PlatformPattern>,
    /// Answers collected a second time to training probes: which classes repeat bit for bit.
    pub repeats: &'a [Record],
    pub transfer: Option<(&'a [Record], &'a ReferenceIndex, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassAccuracy {
    pub class: String,
    pub name: String,
    pub correct: usize,
    pub total: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryCurve {
    /// (queries per decision, accuracy, decisions made)
    pub points: Vec<(usize, f64, usize)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    pub features: String,
    pub single_query: f64,
    pub per_class: Vec<ClassAccuracy>,
    /// `confusion[true][predicted]`; the last column counts "unknown".
    pub confusion: Vec<Vec<usize>>,
    pub by_queries: QueryCurve,
    /// Per dimension, (queries per decision, share of decisions whose most probable class has
    /// the served platform's value on that dimension), unknown or not.
    #[serde(default)]
    pub per_dimension: Vec<(Dimension, Vec<(usize, f64)>)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub class: String,
    pub name: String,
    /// (queries per decision, fraction flagged unknown)
    pub flagged_unknown: Vec<(usize, f64)>,
    /// (queries per decision, fraction whose most probable known class has the held-out
    /// class's format): the format named right though the platform is not known.
    #[serde(default)]
    pub format_named: Vec<(usize, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalReport {
    pub model: String,
    pub classes: Vec<ClassLabel>,
    pub train_samples: usize,
    pub test_samples: usize,
    /// Test probes that also occur in training (0 for a fair test of generalisation).
    pub test_probes_seen: usize,
    pub random_guess: f64,
    pub alpha: f64,
    pub hspi: Scores,
    pub baseline: Option<Scores>,
    /// Training probes replayed through the exact-match path: (correct, total).
    pub exact_replay: (usize, usize),
    /// Known test answers wrongly flagged unknown, per queries-per-decision.
    pub known_flagged_unknown: Vec<(usize, f64)>,
    pub held_out: Vec<HeldOut>,
    pub transfer: Option<(String, Scores)>,
}

/// `--queries 1,2,4`: positive counts of queries per decision.
pub fn parse_queries(list: &str) -> Result<Vec<usize>, ClassifyError> {
    list.split(',')
        .map(|q| {
            q.trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    ClassifyError::Param(format!("--queries: '{q}' is not a positive count"))
                })
        })
        .collect()
}

pub fn evaluate(input: EvalInput) -> Result<EvalReport, ClassifyError> {
    let train_one = |kinds: Vec<FeatureKind>, records: &[Record], params: TrainParams| {
        PlatformModel::train(TrainInput {
            records,
            model: input.model.clone(),
            probe_set_hash: input.probe_set_hash.clone(),
            references: input.references,
            reference_platforms: input.reference_platforms.clone(),
            kinds,
            params,
            repeats: input.repeats,
        })
    };
    let model = train_one(input.kinds.clone(), input.train, input.params.clone())?;
    let test: Vec<&Record> = input.test.iter().filter(|r| r.platform.is_some()).collect();
    if test.is_empty() {
        return Err(ClassifyError::NoLabelledTestRecords);
    }
    let train_probes: std::collections::HashSet<&str> =
        input.train.iter().map(|r| r.probe_id.as_str()).collect();
    let test_probes_seen = test
        .iter()
        .map(|r| r.probe_id.as_str())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter(|p| train_probes.contains(p))
        .count();
    let hspi = scores(&model, &test, input.references, &input.queries, input.seed);
    let baseline = if input.baseline_kinds.is_empty() {
        None
    } else {
        let b = train_one(
            input.baseline_kinds.clone(),
            input.train,
            input.params.clone(),
        )?;
        Some(scores(
            &b,
            &test,
            input.references,
            &input.queries,
            input.seed,
        ))
    };
    let exact_replay = {
        let labelled: Vec<&Record> = input
            .train
            .iter()
            .filter(|r| r.platform.is_some())
            .collect();
        let right = labelled
            .iter()
            .filter(|r| {
                let id = model.identify(&[**r], input.references);
                id.method == "exact-match"
                    && truth(&model, r).is_some_and(|t| id.class() == Some(t))
            })
            .count();
        (right, labelled.len())
    };
    let test_scored = model.score_records(&test, input.references);
    let known_flagged_unknown = input
        .queries
        .iter()
        .map(|n| {
            let decided = decisions(
                &model,
                &test,
                &test_scored,
                input.references,
                *n,
                input.seed,
            );
            (*n, unknown_share(&decided))
        })
        .collect();
    let single_alpha = TrainParams {
        alphas: vec![model.validation.alpha],
        ..input.params.clone()
    };
    let groups: Vec<Vec<&ClassLabel>> = match &input.hold_out {
        Some(pattern) => {
            let group: Vec<&ClassLabel> = model
                .classes
                .iter()
                .filter(|c| c.members.iter().any(|m| pattern.matches(m)))
                .collect();
            if group.is_empty() || group.len() == model.classes.len() {
                return Err(ClassifyError::Param(format!(
                    "--hold-out {pattern} matches {} of the {} classes: it must leave some out and some in",
                    group.len(),
                    model.classes.len()
                )));
            }
            vec![group]
        }
        None => model
            .classes
            .iter()
            .take(input.max_held_out)
            .map(|c| vec![c])
            .collect(),
    };
    let mut held_out = Vec::new();
    for group in groups {
        let rest: Vec<Record> = input
            .train
            .iter()
            .filter(|r| !group.iter().any(|c| is_member(c, r)))
            .cloned()
            .collect();
        let without = train_one(input.kinds.clone(), &rest, single_alpha.clone())?;
        for class in group {
            let theirs: Vec<&Record> = test
                .iter()
                .copied()
                .filter(|r| is_member(class, r))
                .collect();
            let scored = without.score_records(&theirs, input.references);
            let (mut flagged_unknown, mut format_named) = (Vec::new(), Vec::new());
            for &n in &input.queries {
                let decided =
                    decisions(&without, &theirs, &scored, input.references, n, input.seed);
                flagged_unknown.push((n, unknown_share(&decided)));
                format_named.push((
                    n,
                    dimension_shares(&without, &decided)[Dimension::Format as usize],
                ));
            }
            held_out.push(HeldOut {
                class: class.id.clone(),
                name: class.name(),
                flagged_unknown,
                format_named,
            });
        }
    }
    let transfer = input.transfer.map(|(records, refs, name)| {
        let labelled: Vec<&Record> = records
            .iter()
            .filter(|r| truth(&model, r).is_some())
            .collect();
        (
            name,
            scores(&model, &labelled, refs, &input.queries, input.seed),
        )
    });
    Ok(EvalReport {
        model: model.model.id.clone(),
        random_guess: 1.0 / model.classes.len() as f64,
        alpha: model.validation.alpha,
        classes: model.classes.clone(),
        train_samples: model.samples,
        test_samples: test.len(),
        test_probes_seen,
        hspi,
        baseline,
        exact_replay,
        known_flagged_unknown,
        held_out,
        transfer,
    })
}

fn is_member(class: &ClassLabel, r: &Record) -> bool {
    r.platform
        .as_ref()
        .is_some_and(|p| class.members.contains(p))
}

/// The class id a labelled record belongs to in this model.
fn truth<'m>(model: &'m PlatformModel, r: &Record) -> Option<&'m str> {
    model
        .classes
        .iter()
        .find(|c| is_member(c, r))
        .map(|c| c.id.as_str())
}

/// Test answers grouped by platform: the queries one decision may combine.
fn by_platform(records: &[&Record]) -> BTreeMap<String, Vec<usize>> {
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, r) in records.iter().enumerate() {
        let key = r.platform_key();
        groups.entry(key).or_default().push(i);
    }
    groups
}

const DRAWS: usize = 25;

/// Decisions over random sets of `n` queries drawn from one platform's answers.
fn draws(groups: &BTreeMap<String, Vec<usize>>, n: usize, seed: u64) -> Vec<Vec<usize>> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ n as u64);
    let mut out = Vec::new();
    for members in groups.values() {
        if members.len() < n {
            continue;
        }
        if n == 1 {
            out.extend(members.iter().map(|i| vec![*i]));
            continue;
        }
        for _ in 0..DRAWS {
            out.push(members.choose_multiple(&mut rng, n).copied().collect());
        }
    }
    out
}

fn scores(
    model: &PlatformModel,
    test: &[&Record],
    refs: &ReferenceIndex,
    queries: &[usize],
    seed: u64,
) -> Scores {
    let scored = model.score_records(test, refs);
    let k = model.classes.len();
    let mut confusion = vec![vec![0usize; k + 1]; k];
    let mut points = Vec::new();
    let mut per_dimension: Vec<(Dimension, Vec<(usize, f64)>)> = Dimension::ALL
        .into_iter()
        .map(|d| (d, Vec::new()))
        .collect();
    for &n in queries {
        let decided = decisions(model, test, &scored, refs, n, seed);
        let (mut right, mut total) = (0, 0);
        for (first, id) in &decided {
            let Some(t) = truth(model, first) else {
                continue;
            };
            let predicted = id
                .class()
                .and_then(|c| model.classes.iter().position(|x| x.id == c));
            if n == 1 {
                let ti = model.classes.iter().position(|x| x.id == t).unwrap_or(0);
                confusion[ti][predicted.unwrap_or(k)] += 1;
            }
            right += usize::from(id.class() == Some(t));
            total += 1;
        }
        if total > 0 {
            points.push((n, right as f64 / total as f64, total));
        }
        if !decided.is_empty() {
            let shares = dimension_shares(model, &decided);
            for (d, curve) in &mut per_dimension {
                curve.push((n, shares[*d as usize]));
            }
        }
    }
    let per_class: Vec<ClassAccuracy> = model
        .classes
        .iter()
        .enumerate()
        .map(|(i, c)| ClassAccuracy {
            class: c.id.clone(),
            name: c.name(),
            correct: confusion[i][i],
            total: confusion[i].iter().sum(),
        })
        .collect();
    let all: usize = per_class.iter().map(|c| c.total).sum();
    let single_query =
        per_class.iter().map(|c| c.correct).sum::<usize>() as f64 / all.max(1) as f64;
    Scores {
        features: model.spec.describe(),
        single_query,
        per_class,
        confusion,
        by_queries: QueryCurve { points },
        per_dimension,
    }
}

/// Per dimension (in [`Dimension::ALL`] order), the share of decisions over `n` queries whose
/// most probable class has, on that dimension, the value of the platform that answered.
/// One decision per draw of `n` queries from a platform's answers (see [`draws`]): the draw's
/// first record and the identification. Accuracy, the unknown rate and the per-dimension shares
/// are all read from one pass.
fn decisions<'r>(
    model: &PlatformModel,
    records: &[&'r Record],
    scored: &[Scored],
    refs: &ReferenceIndex,
    n: usize,
    seed: u64,
) -> Vec<(&'r Record, Identification)> {
    draws(&by_platform(records), n, seed)
        .into_iter()
        .map(|set| {
            let recs: Vec<&Record> = set.iter().map(|i| records[*i]).collect();
            let sc: Vec<&Scored> = set.iter().map(|i| &scored[*i]).collect();
            (records[set[0]], model.decide(&recs, &sc, refs))
        })
        .collect()
}

/// Per dimension (in [`Dimension::ALL`] order), the share of decisions whose most probable class
/// has, on that dimension, the value of the platform that answered (NaN without decisions).
fn dimension_shares(model: &PlatformModel, decided: &[(&Record, Identification)]) -> [f64; 5] {
    let mut right = [0usize; 5];
    for (first, id) in decided {
        let top = id.posterior.first();
        let class = top.and_then(|t| model.classes.iter().find(|c| c.id == t.class));
        let (Some(class), Some(served)) = (class, &first.platform) else {
            continue;
        };
        for d in Dimension::ALL {
            let value = d.field(served);
            let named = match id.nearest.iter().find(|(n, _)| *n == d) {
                // Read from the format evidence that tolerates a change of hardware.
                Some((_, format)) if d == Dimension::Format && !id.format_evidence.is_empty() => {
                    *format == shown(d, served)
                }
                _ => class.members.iter().any(|m| d.field(m) == value),
            };
            right[d as usize] += usize::from(named);
        }
    }
    right.map(|r| r as f64 / decided.len() as f64)
}

/// The share of decisions that say "unknown platform" (NaN without decisions).
fn unknown_share(decided: &[(&Record, Identification)]) -> f64 {
    let unknown = decided.iter().filter(|(_, id)| id.is_unknown()).count();
    unknown as f64 / decided.len() as f64
}
