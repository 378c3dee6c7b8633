//! Group platforms into equivalence classes: bit-identical outputs on every probe.

use std::collections::{BTreeMap, BTreeSet};

use hspi_datasets::{Eqc, Record};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ClassifyError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EqcGrouping {
    pub eqcs: Vec<Eqc>,
    pub platforms: usize,
    pub probes: usize,
}

impl EqcGrouping {
    /// The class a platform (its string form) belongs to.
    pub fn class_of(&self, platform: &str) -> Option<&Eqc> {
        self.eqcs
            .iter()
            .find(|e| e.members.iter().any(|m| m.to_string() == platform))
    }
}

/// A platform's label (when known) and its output bytes per probe id.
type PlatformOutputs<'a> = (Option<hspi_datasets::Platform>, BTreeMap<&'a str, Vec<u8>>);

/// Records are keyed by their platform label. Every platform must answer every probe that any
/// platform answered, or the classes would compare different evidence.
pub fn group_eqcs<'a>(
    records: impl IntoIterator<Item = &'a Record>,
) -> Result<EqcGrouping, ClassifyError> {
    let mut by_platform: BTreeMap<String, PlatformOutputs> = BTreeMap::new();
    let mut all_probes = BTreeSet::new();
    for r in records {
        let key = r.platform_key();
        let entry = by_platform
            .entry(key.clone())
            .or_insert_with(|| (r.platform.clone(), BTreeMap::new()));
        let bytes = r.outputs.identity_bytes();
        if let Some(prev) = entry.1.insert(&r.probe_id, bytes.clone()) {
            if prev != bytes {
                return Err(ClassifyError::Conflict {
                    platform: key,
                    probe: r.probe_id.clone(),
                });
            }
        }
        all_probes.insert(r.probe_id.as_str());
    }
    if by_platform.is_empty() {
        return Err(ClassifyError::Empty);
    }
    let mut classes: BTreeMap<String, Vec<hspi_datasets::Platform>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    for (key, (platform, outputs)) in &by_platform {
        if outputs.len() != all_probes.len() {
            return Err(ClassifyError::Incomplete {
                platform: key.clone(),
                have: outputs.len(),
                total: all_probes.len(),
            });
        }
        let mut h = Sha256::new();
        for (probe, bytes) in outputs {
            h.update(probe.as_bytes());
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        }
        let signature = hex::encode(h.finalize());
        if !classes.contains_key(&signature) {
            order.push(signature.clone());
        }
        let platform = platform.clone().unwrap_or_else(|| remote_platform(key));
        classes.entry(signature).or_default().push(platform);
    }
    let eqcs = order
        .into_iter()
        .enumerate()
        .map(|(i, signature)| Eqc {
            id: format!("E{}", i + 1),
            members: classes.remove(&signature).unwrap_or_default(),
            signature,
        })
        .collect();
    Ok(EqcGrouping {
        eqcs,
        platforms: by_platform.len(),
        probes: all_probes.len(),
    })
}

/// Records without a platform label (an endpoint under audit) group under an opaque platform.
fn remote_platform(target: &str) -> hspi_datasets::Platform {
    hspi_datasets::Platform {
        hardware: hspi_datasets::Hardware::Remote {
            name: hspi_datasets::platform::slugify(target),
        },
        engine: hspi_datasets::Engine {
            kind: hspi_datasets::EngineKind::Http,
            version: None,
        },
        format: hspi_datasets::NumericFormat::F32,
        kernel: None,
        batch_size: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_datasets::{LogitBits, Outputs};

    fn rec(platform: &str, probe: &str, v: f32) -> Record {
        Record {
            probe_id: probe.into(),
            target: format!("local:m@{platform}"),
            platform: Some(platform.parse().unwrap()),
            outputs: Outputs::Logits {
                values: LogitBits::from_f32(&[v, 1.0]),
            },
            timing_us: 0,
            usage: None,
            served: None,
            asked_as: None,
        }
    }

    const A: &str = "cpu-avx2/candle/f32/bs1";
    const B: &str = "cpu-avx2/candle/f16/bs1";
    const C: &str = "cpu-avx2/candle/bf16/bs1";

    #[test]
    fn identical_on_every_probe_means_same_class() {
        let records = vec![
            rec(A, "p1", 1.0),
            rec(B, "p1", 1.0),
            rec(C, "p1", 1.0),
            rec(A, "p2", 2.0),
            rec(B, "p2", 2.0),
            rec(C, "p2", 2.0 + f32::EPSILON * 2.0),
        ];
        let g = group_eqcs(&records).unwrap();
        assert_eq!(g.eqcs.len(), 2);
        assert_eq!(g.class_of(A), g.class_of(B));
        assert_ne!(g.class_of(A), g.class_of(C));
        assert_eq!((g.platforms, g.probes), (3, 2));
    }

    #[test]
    fn negative_zero_is_a_different_bit_pattern() {
        let g = group_eqcs(&[rec(A, "p", 0.0), rec(B, "p", -0.0)]).unwrap();
        assert_eq!(g.eqcs.len(), 2);
    }

    #[test]
    fn missing_probes_are_refused() {
        let e = group_eqcs(&[rec(A, "p1", 1.0), rec(A, "p2", 1.0), rec(B, "p1", 1.0)]).unwrap_err();
        assert!(e.to_string().contains("answered 1 of 2 probes"), "{e}");
    }
}
