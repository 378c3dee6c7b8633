use thiserror::Error;

#[derive(Debug, Error)]
pub enum ClassifyError {
    #[error("platform {platform} answered {have} of {total} probes: EQCs need every platform on every probe\nhint: finish the collection with `hspi collect ... --resume`")]
    Incomplete {
        platform: String,
        have: usize,
        total: usize,
    },
    #[error("platform {platform} answered probe {probe} twice with different outputs")]
    Conflict { platform: String, probe: String },
    #[error("no records to group")]
    Empty,
    /// A parameter outside its range (the message names the flag).
    #[error("{0}")]
    Param(String),
    #[error("claim {claim} names nothing to check: every part is open\nhint: name at least the part to audit, e.g. --claim '*/*/f16/*' for the format")]
    ClaimNamesNothing { claim: String },
    #[error("claim {claim} matches no platform the model knows ({known})\nhint: collect a reference dataset for the claimed platform and train on it")]
    ClaimMatchesNoPlatform { claim: String, known: String },
    #[error("training needs at least two classes, found {found}")]
    TooFewClasses { found: usize },
    #[error("no feature extractor chosen")]
    NoFeatureExtractor,
    #[error("no platform-labelled records to train on (endpoint records carry no label)\nhint: train on datasets collected with a platform label (hspi collect --label PLATFORM, or locally)")]
    NothingToTrainOn,
    #[error("no platform-labelled test records")]
    NoLabelledTestRecords,
    #[error("feature '{feature}' compares answers with hspi's own: no reference platforms given\nhint: pass --references DIR (datasets collected locally over the same probes)")]
    FeatureNeedsReferences { feature: String },
    #[error("the datasets hold {} targets ({}): verify one target at a time", targets.len(), targets.join(", "))]
    SeveralTargets { targets: Vec<String> },
    #[error("no evidence mode reads these answers (no logits and no completions)")]
    NoEvidenceMode,
    #[error("no evidence mode reads '{kind}' answers")]
    UnknownOutputKind { kind: String },
    #[error("unknown feature '{name}' (known: {known})")]
    UnknownFeature { name: String, known: String },
    #[error("the answer source failed: {0}")]
    Source(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("fitting the logistic model failed: {0}")]
    Fit(String),
    #[error("{0}")]
    Mismatch(String),
    #[error("model file {path}: {reason}")]
    ModelFile { path: String, reason: String },
}
