//! Feature extractors, classifiers, EQC grouping and the verifier.

pub mod audit;
pub mod change_point;
pub mod dimension_verdict;
pub mod eqc;
mod error;
pub mod evaluate;
pub mod evidence;
pub mod exact;
pub mod features;
pub mod identify;
pub mod integrity;
pub mod linear;
pub mod model;
pub mod references;
pub mod repeated_audits;
pub mod sources;
pub mod verify;

pub use audit::{
    run_audit, AnswerSource, AuditOutcome, RecordSource, SpendingCapReached, Unanswered,
};
pub use eqc::{group_eqcs, EqcGrouping};
pub use error::ClassifyError;
pub use evidence::{EvidenceMode, ExactLogprobs, FullLogits};
pub use identify::{Decision, Identification};
pub use model::{PlatformModel, TrainInput};
pub use references::ReferenceIndex;
