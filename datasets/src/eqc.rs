//! Equivalence classes: platforms whose outputs are bit-identical on every probe.

use serde::{Deserialize, Serialize};

use crate::platform::Platform;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Eqc {
    /// Stable within one grouping: E1, E2, … ordered by their first member.
    pub id: String,
    /// sha256 over every probe's output bits, identical for all members.
    pub signature: String,
    pub members: Vec<Platform>,
}
