//! Feature extractors, classifiers, EQC grouping and the verifier.

pub mod eqc;
mod error;

pub use eqc::{group_eqcs, EqcGrouping};
pub use error::ClassifyError;
