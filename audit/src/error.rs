use thiserror::Error;

#[derive(Debug, Error)]
pub enum AuditError {
    #[error(transparent)]
    Dataset(#[from] hspi_datasets::DatasetError),
    #[error(transparent)]
    Collect(#[from] hspi_collect::CollectError),
    #[error(transparent)]
    Probe(#[from] hspi_probe::ProbeError),
    #[error(transparent)]
    Classify(#[from] hspi_classify::ClassifyError),
    #[error(transparent)]
    Report(#[from] hspi_reports::ReportError),
    #[error(transparent)]
    Pack(#[from] hspi_pack::PackError),
    #[error("--claim: {0}")]
    Claim(#[from] hspi_datasets::PatternParseError),
    #[error("{path}: {source}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    // The user's faults, one variant each (`hint:` lines where a next step helps).
    #[error("references-slurm: no --formats and no --engine: the array would have no task")]
    NoReferenceTasks,
    #[error("hspi audit needs --pack DIR, --model NAME (to use its installed pack), or --classifier FILE --references DIRS\nhint: `hspi pack list` shows the installed packs")]
    NoReferences,
    #[error("--weights {weights}: sha256 {sha} is not the weights of pack {pack}'s model {model} ({expected})\nhint: pass the weights the pack was built from (`hspi fetch {model}` prints their path)")]
    WeightsNotThePacks {
        weights: String,
        sha: String,
        pack: String,
        model: String,
        expected: String,
    },
    #[error("claim {claim} names no format: fresh prompts (--weights) test the format and the model\nhint: claim a format, e.g. --claim '*/*/f16/*'")]
    ClaimNamesNoFormat { claim: String },
    #[error("--answers-of {platform}: no such answers in the datasets (they hold: {holds})")]
    NoSuchAnswers { platform: String, holds: String },
    #[error("training model {train} and test model {test} differ (use --transfer for cross-model tests)")]
    ModelsDiffer { train: String, test: String },
    #[error("--formats {word}: no engine here computes a {word} format yet, and no platform can name one (hspi has no {word} format)\nhint: leave {word} out of --formats: a provider serving it is told apart from the formats hspi has, as \"a format no reference covers\"")]
    NoEngineForFamily { word: String },
    #[error("--formats {format}: hspi's engine does not compute {model} at it")]
    FormatNotComputed { format: String, model: String },
    #[error("--formats needs --gguf FILE (the weights to requantise)")]
    FormatsWithoutWeights,
    #[error("each --reference-endpoint needs its --label PLATFORM, in the same order")]
    EndpointLabelsUnpaired,
    #[error("--reference-endpoint {url} needs --label PLATFORM (what the trusted endpoint runs)")]
    EndpointWithoutLabel { url: String },
    #[error("nothing to build references from: give --formats (run llama.cpp here), --reference-endpoint URL --label PLATFORM, or --engine 'PLATFORM=COMMAND'")]
    NothingToBuild,
    #[error("{path} already exists\nhint: pass --force to replace it, or `hspi pack merge {path} DATASETS` to add platforms")]
    OutExists { path: String },
    #[error("pack plan {path}: {reason}")]
    BadPackPlan { path: String, reason: String },
    #[error("pack plan {plan}: {jobs} not finished (no done.json in its shard)\nhint: run `{hspi}` for each (the Slurm array's failed tasks: `sacct`), then assemble again")]
    PackJobsUnfinished {
        plan: String,
        jobs: String,
        hspi: String,
    },
    #[error("prompt {prompt}: hspi's tokenizer counts {ours} tokens, the local llama-server billed {billed}: billing checks would be wrong\nhint: the GGUF's tokenizer or chat template is one hspi does not reproduce")]
    TokenCountsDiffer {
        prompt: String,
        ours: u64,
        billed: u64,
    },
    #[error("{dir}: references of {count} platform only: a verdict weighs the claim against alternatives\nhint: add --formats (llama.cpp here) or another --reference-endpoint URL --label PLATFORM (e.g. the same API at another precision)")]
    TooFewPlatforms { dir: String, count: usize },
    #[error("{dir}: the answer to probe {probe} carries no platform label: a reference must say what produced it\nhint: collect with --label PLATFORM")]
    UnlabelledReference { dir: String, probe: String },
    #[error("{dir} shares no prompt with the pack's pool ({pool} prompts): its answers could never be compared\nhint: collect the pack's pool.json (`hspi collect --probes POOL`)")]
    NoSharedPrompt { dir: String, pool: usize },
    #[error(
        "{dir}: {platform} answered {answered} of {of} probes; batches cannot be rebuilt with gaps"
    )]
    AnswersWithGaps {
        dir: String,
        platform: String,
        answered: usize,
        of: usize,
    },
    #[error("{dir}: no GPU platform {platform} in this dataset (it holds: {holds})")]
    NoSuchGpuPlatform {
        dir: String,
        platform: String,
        holds: String,
    },
    #[error("{plans} has no plan for any GPU platform of {answers}")]
    NoPlans { plans: String, answers: String },
    #[error("--provider '{spec}': {why} (expected NAME=URL[,claim=SPEC][,api-key-env=VAR])")]
    BadProvider { spec: String, why: String },
    #[error("--every '{text}': expected a pause such as 90s, 30m, 2h or 1d")]
    BadPause { text: String },
    #[error("hspi watch needs at least one --provider NAME=URL")]
    NoProviders,
    #[error("--provider {name} is named twice")]
    ProviderTwice { name: String },
    #[error("--rounds must be at least 1 and the jitter in [0, 1), not {rounds} and {jitter}")]
    BadRounds { rounds: u32, jitter: f64 },
    #[error("{dir} watches {old}, not {new}: resume with the same --provider list, or watch into another --out")]
    WatchProvidersDiffer {
        dir: String,
        old: String,
        new: String,
    },
    #[error("{path}: {why} (is {dir} a watch directory, written by `hspi watch --out`?)")]
    NotAWatchDir {
        path: String,
        dir: String,
        why: String,
    },
    #[error("{path}: not a watch plan: {why}")]
    NotAWatchPlan { path: String, why: String },
    #[error("{path}:{line}: not a watch round: {why}")]
    NotAWatchRound {
        path: String,
        line: usize,
        why: String,
    },
    #[error("the watch's total budget is spent: {requests} requests and {cost:.6} in charges (--total-max-requests {}, --total-max-cost {}); every round so far is kept", fmt_cap(max_requests), fmt_cap(max_cost))]
    WatchBudget {
        requests: u64,
        cost: f64,
        max_requests: Option<u64>,
        max_cost: Option<f64>,
    },
}

fn fmt_cap<T: std::fmt::Display>(cap: &Option<T>) -> String {
    cap.as_ref().map_or("unset".into(), ToString::to_string)
}

impl AuditError {
    pub(crate) fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> AuditError + '_ {
        move |source| AuditError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
