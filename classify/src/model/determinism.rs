//! Whether a class's answers repeat bit for bit, measured from a repeated collection of some of
//! its probes (`hspi train --repeats DIR`). Only a class known to repeat can be ruled out by one
//! answer that differs from hspi's recomputation; a class that varies (batched under load, GPU
//! batching) never is.

use std::collections::HashMap;

use hspi_datasets::{Platform, Record};
use serde::{Deserialize, Serialize};

use crate::exact::output_hash;

/// How a class's repeated answers compared with its first ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepeatCheck {
    /// Answers collected twice (same platform, same probe).
    pub compared: usize,
    /// Of those, bit-identical both times.
    pub identical: usize,
}

impl RepeatCheck {
    /// Repeats bit for bit: measured, and never otherwise.
    pub fn deterministic(&self) -> bool {
        self.compared > 0 && self.identical == self.compared
    }
}

/// Each class's repeat check (a class given by its member platforms): `repeats` are answers
/// collected again, on the same platforms, to probes `records` already holds.
pub fn repeat_checks(
    classes: &[&[Platform]],
    records: &[Record],
    repeats: &[Record],
) -> Vec<Option<RepeatCheck>> {
    let first: HashMap<(&Platform, &str), String> = records
        .iter()
        .filter_map(|r| Some(((r.platform.as_ref()?, r.probe_id.as_str()), output_hash(r))))
        .collect();
    let mut checks: Vec<Option<RepeatCheck>> = vec![None; classes.len()];
    for r in repeats {
        let Some(platform) = &r.platform else {
            continue;
        };
        let Some(class) = classes.iter().position(|c| c.contains(platform)) else {
            continue;
        };
        let Some(before) = first.get(&(platform, r.probe_id.as_str())) else {
            continue;
        };
        let check = checks[class].get_or_insert_with(RepeatCheck::default);
        check.compared += 1;
        check.identical += usize::from(*before == output_hash(r));
    }
    checks
}

#[cfg(test)]
mod tests {
    use super::*;
    use hspi_datasets::{LogitBits, Outputs};

    fn record(platform: &str, probe: &str, v: f32) -> Record {
        Record {
            probe_id: probe.into(),
            target: "t".into(),
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

    #[test]
    fn a_class_is_deterministic_only_when_measured_to_repeat() {
        let (a, b, c) = (
            "cpu-avx2/llamacpp-1/f16/bs1",
            "cpu-avx2/llamacpp-1/f16/bs4",
            "cpu-avx2/llamacpp-1/q8_0/bs1",
        );
        let platforms: Vec<Platform> = [a, b, c].iter().map(|p| p.parse().unwrap()).collect();
        let classes: Vec<&[Platform]> = platforms.iter().map(std::slice::from_ref).collect();
        let records = vec![
            record(a, "p1", 0.5),
            record(a, "p2", 0.25),
            record(b, "p1", 0.75),
        ];
        let repeats = vec![
            record(a, "p1", 0.5),
            record(a, "p2", 0.25),
            record(b, "p1", 0.7),
        ];
        let checks = repeat_checks(&classes, &records, &repeats);
        assert_eq!(
            checks[0],
            Some(RepeatCheck {
                compared: 2,
                identical: 2
            })
        );
        assert!(checks[0].unwrap().deterministic());
        assert!(!checks[1].unwrap().deterministic(), "varies under load");
        assert_eq!(checks[2], None, "not measured");
    }
}
