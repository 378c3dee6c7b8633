//! Minimal probe sets: the fewest probes that still separate every pair of EQCs (greedy set cover,
//! within a factor ln(pairs) of the optimum), with the pair coverage they reach.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

/// For one probe: the output signature (any hashable bytes) of each class representative.
pub type ProbeOutputs = Vec<Vec<u8>>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cover {
    /// Indices of the chosen probes, in the order chosen.
    pub chosen: Vec<usize>,
    pub pairs: usize,
    pub covered: usize,
    /// Pairs no probe separates (identical on every probe: they should have been one class).
    pub inseparable: Vec<(usize, usize)>,
}

/// `outputs[p][c]` is class `c`'s output on probe `p`. Stops when every separable pair is covered.
pub fn greedy_cover(outputs: &[ProbeOutputs]) -> Cover {
    let classes = outputs.first().map_or(0, Vec::len);
    let all_pairs: BTreeSet<(usize, usize)> = (0..classes)
        .flat_map(|a| (a + 1..classes).map(move |b| (a, b)))
        .collect();
    let separates: Vec<BTreeSet<(usize, usize)>> = outputs
        .iter()
        .map(|o| {
            all_pairs
                .iter()
                .copied()
                .filter(|(a, b)| o[*a] != o[*b])
                .collect()
        })
        .collect();
    let separable: BTreeSet<_> = separates.iter().flatten().copied().collect();
    let mut uncovered = separable.clone();
    let mut chosen = Vec::new();
    while !uncovered.is_empty() {
        let (best, gain) = separates
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.intersection(&uncovered).count()))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .expect("a separable pair has a probe that separates it");
        debug_assert!(gain > 0);
        for pair in &separates[best] {
            uncovered.remove(pair);
        }
        chosen.push(best);
    }
    Cover {
        chosen,
        pairs: all_pairs.len(),
        covered: separable.len(),
        inseparable: all_pairs.difference(&separable).copied().collect(),
    }
}

/// Group records' outputs into the table `greedy_cover` takes: probes in `probe_order`, classes
/// given as one representative key each.
pub fn output_table(
    probe_order: &[String],
    representatives: &[String],
    outputs: &BTreeMap<(String, String), Vec<u8>>,
) -> Vec<ProbeOutputs> {
    probe_order
        .iter()
        .map(|p| {
            representatives
                .iter()
                .map(|r| {
                    outputs
                        .get(&(r.clone(), p.clone()))
                        .cloned()
                        .unwrap_or_default()
                })
                .collect()
        })
        .collect()
}

/// The fewest probes of collected datasets (over one probe set) that separate every pair of
/// their EQCs (`hspi probe minimize`), as `--json` prints it; `set` holds those probes.
#[derive(Debug, Serialize)]
pub struct Minimized {
    pub eqcs: usize,
    pub pairs: usize,
    pub covered: usize,
    pub probes_available: usize,
    pub probes_chosen: usize,
    pub inseparable: Vec<(usize, usize)>,
    #[serde(skip)]
    pub set: hspi_datasets::ProbeSet,
}

impl std::fmt::Display for Minimized {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} of {} probes separate {} of {} EQC pairs ({} EQCs)",
            self.probes_chosen, self.probes_available, self.covered, self.pairs, self.eqcs
        )
    }
}

pub fn minimize(datasets: &[std::path::PathBuf]) -> Result<Minimized, crate::ProbeError> {
    let (records, probes, _) = hspi_datasets::store::load_same_probes(datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    let representatives: Vec<String> = grouping
        .eqcs
        .iter()
        .map(|e| e.members[0].to_string())
        .collect();
    let outputs: BTreeMap<(String, String), Vec<u8>> = records
        .iter()
        .map(|r| {
            (
                (r.platform_key(), r.probe_id.clone()),
                r.outputs.identity_bytes(),
            )
        })
        .collect();
    let order: Vec<String> = probes.probes.iter().map(|p| p.id.clone()).collect();
    let cover = greedy_cover(&output_table(&order, &representatives, &outputs));
    Ok(Minimized {
        eqcs: grouping.eqcs.len(),
        pairs: cover.pairs,
        covered: cover.covered,
        probes_available: probes.probes.len(),
        probes_chosen: cover.chosen.len(),
        inseparable: cover.inseparable,
        set: hspi_datasets::ProbeSet {
            generator: format!("minimized:{}", probes.generator),
            seed: probes.seed,
            probes: cover
                .chosen
                .iter()
                .map(|i| probes.probes[*i].clone())
                .collect(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_few_probes_that_separate_every_pair() {
        // 4 classes; probe 0 splits {0,1}|{2,3}, probe 1 splits {0,2}|{1,3}, probes 2-4 weaker.
        let o = |v: [u8; 4]| v.iter().map(|x| vec![*x]).collect::<Vec<_>>();
        let outputs = vec![
            o([0, 0, 1, 1]),
            o([0, 1, 0, 1]),
            o([0, 0, 0, 1]),
            o([1, 0, 0, 0]),
            o([0, 0, 0, 0]),
        ];
        let c = greedy_cover(&outputs);
        assert_eq!(c.pairs, 6);
        assert_eq!(c.covered, 6);
        assert_eq!(c.chosen, vec![0, 1]);
        assert!(c.inseparable.is_empty());
    }

    #[test]
    fn reports_pairs_nothing_separates() {
        let outputs = vec![vec![vec![1], vec![1], vec![2]]];
        let c = greedy_cover(&outputs);
        assert_eq!(c.inseparable, vec![(0, 1)]);
        assert_eq!(c.covered, 2);
    }
}
