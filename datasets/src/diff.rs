//! Record-for-record comparison of two datasets: does a platform answer the same probes with the
//! same bits on another machine, with another thread count, after an upgrade? Records pair by
//! platform label (or target, for unlabelled records) and probe id; when each dataset holds
//! exactly one platform, those two are compared whatever their labels.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::error::Result;
use crate::record::{Outputs, Record};
use crate::store::Dataset;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformDiff {
    pub left: String,
    pub right: String,
    /// Probes both datasets answered on this platform.
    pub common_probes: usize,
    /// Of those, answered with the same outputs, bit for bit.
    pub identical: usize,
    /// The first differing probe id, in the left dataset's probe order.
    pub first_difference: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatasetDiff {
    pub pairs: Vec<PlatformDiff>,
    /// Platforms only one side holds.
    pub only_left: Vec<String>,
    pub only_right: Vec<String>,
}

impl DatasetDiff {
    /// Every paired platform answered every common probe alike, and nothing went unpaired.
    pub fn all_identical(&self) -> bool {
        self.only_left.is_empty()
            && self.only_right.is_empty()
            && self
                .pairs
                .iter()
                .all(|p| p.common_probes > 0 && p.identical == p.common_probes)
    }
}

/// platform → probe id → outputs.
fn by_platform(records: Vec<Record>) -> BTreeMap<String, HashMap<String, Outputs>> {
    let mut out: BTreeMap<String, HashMap<String, Outputs>> = BTreeMap::new();
    for r in records {
        out.entry(r.platform_key())
            .or_default()
            .insert(r.probe_id, r.outputs);
    }
    out
}

pub fn diff(left: &Dataset, right: &Dataset) -> Result<DatasetDiff> {
    let order: Vec<String> = left.probe_set()?.probes.into_iter().map(|p| p.id).collect();
    let (a, b) = (by_platform(left.records()?), by_platform(right.records()?));
    let pairs: Vec<(String, String)> = if a.len() == 1 && b.len() == 1 {
        vec![(
            a.keys().next().unwrap().clone(),
            b.keys().next().unwrap().clone(),
        )]
    } else {
        a.keys()
            .filter(|k| b.contains_key(*k))
            .map(|k| (k.clone(), k.clone()))
            .collect()
    };
    let unpaired = |side: &BTreeMap<String, HashMap<String, Outputs>>, left_side: bool| {
        side.keys()
            .filter(|k| {
                !pairs
                    .iter()
                    .any(|(l, r)| if left_side { l == *k } else { r == *k })
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    let (only_left, only_right) = (unpaired(&a, true), unpaired(&b, false));
    let pairs = pairs
        .into_iter()
        .map(|(l, r)| {
            let (x, y) = (&a[&l], &b[&r]);
            let common: Vec<&String> = order
                .iter()
                .filter(|id| x.contains_key(*id) && y.contains_key(*id))
                .collect();
            let differing: Vec<&&String> = common
                .iter()
                .filter(|id| !x[**id].same_answer(&y[**id]))
                .collect();
            PlatformDiff {
                common_probes: common.len(),
                identical: common.len() - differing.len(),
                first_difference: differing.first().map(|id| (**id).clone()),
                left: l,
                right: r,
            }
        })
        .collect();
    Ok(DatasetDiff {
        pairs,
        only_left,
        only_right,
    })
}
