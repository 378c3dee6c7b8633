//! The exact-match path: on a probe seen in training, a deterministic platform's answer is a
//! hash lookup away from its class, with nothing learned.

use std::collections::BTreeMap;

use hspi_datasets::Record;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExactIndex {
    /// probe id → output hash → classes that answered exactly that.
    pub probes: BTreeMap<String, BTreeMap<String, Vec<usize>>>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    /// The probe was never seen in training.
    Unseen,
    /// The classes whose answer to this probe is bit-identical (empty: none is).
    Matches(Vec<usize>),
}

/// The hash bit-identical answers share, as the answer's evidence mode defines bit-identity.
pub fn output_hash(record: &Record) -> String {
    let bytes = crate::evidence::identity_bytes(&record.outputs);
    hex::encode(&Sha256::digest(bytes)[..16])
}

impl ExactIndex {
    pub fn build<'a>(labelled: impl IntoIterator<Item = (&'a Record, usize)>) -> ExactIndex {
        let mut index = ExactIndex::default();
        for (r, class) in labelled {
            let classes = index
                .probes
                .entry(r.probe_id.clone())
                .or_default()
                .entry(output_hash(r))
                .or_default();
            if !classes.contains(&class) {
                classes.push(class);
                classes.sort_unstable();
            }
        }
        index
    }

    pub fn lookup(&self, record: &Record) -> Lookup {
        match self.probes.get(&record.probe_id) {
            None => Lookup::Unseen,
            Some(answers) => Lookup::Matches(
                answers
                    .get(&output_hash(record))
                    .cloned()
                    .unwrap_or_default(),
            ),
        }
    }
}
