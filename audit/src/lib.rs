//! The auditor's workflows, over datasets and endpoints: train a classifier, verify a claim,
//! audit an endpoint (verify + identify + report files), identify, and the demo that runs them
//! end to end. The binary parses flags into these calls and prints what they return.

mod atlas_plan;
mod collect_grid;
mod contract;
mod demo;
mod emulate;
mod endpoint;
mod error;
mod evaluate;
mod forced_references;
mod identify;
mod pack_audit;
mod pack_build;
mod pack_plan;
mod setup;
mod train;
mod watch;
mod watch_command;
mod watch_comparison;
mod watch_log;
mod watch_pack;

pub use atlas_plan::plan_atlas;
pub use collect_grid::{collect_grid, GridCollection};
pub use demo::{demo, DemoOptions};
pub use emulate::{check_plans, checks_text, fit_plans, fitted_line, PlanCheck};
pub use endpoint::{
    audit_endpoint, verify_endpoint, verify_endpoint_forced, verify_endpoint_report, Verified,
};
pub use error::AuditError;
pub use evaluate::{evaluate_datasets, EvalOptions};
pub use forced_references::{
    forced_references, references_slurm_script, EngineApi, ForcedReferences, StartedEngines,
};
pub use identify::identify_datasets;
pub use pack_audit::{
    audit_with_pack, check_model, FreshPrompts, PackAudit, DEFAULT_DRAW, FRESH_REFERENCES,
};
pub use pack_build::{
    build_pack, check_formats, endpoint_defaults, merge_into_pack, work_dir, PackBuild, PackJob,
    REPEATED_PROMPTS,
};
pub use pack_plan::{
    assemble_pack, pack_slurm_script, plan_pack, read_plan, run_pack_job, PackPlan, PLAN_FILE,
};
pub use setup::{load_references, repeat_verify_datasets, verify_datasets, VerifySetup};
pub use train::{train, TrainOptions, TrainSpec, Trained};
pub use watch::{
    findings, parse_every, round_dir, run_watch, Clock, ProviderFindings, RoundAuditor,
    SystemClock, WatchPlan, WatchProvider,
};
pub use watch_command::{replay, watch, watch_with, ChangeNotice, WatchDone, WatchOptions};
pub use watch_comparison::{comparison, watch_report, write_comparison, COMPARISON_FILE};
pub use watch_log::{read_records, RoundOutcome, RoundRecord, WatchLog};
pub use watch_pack::{reverify, round_journal, PackRoundAuditor, TotalBudget};

/// Where a workflow's lines go: data for stdout, status for stderr (the binary's printer).
pub struct Lines<'a> {
    pub data: &'a dyn Fn(&str),
    pub status: &'a dyn Fn(&str),
}
