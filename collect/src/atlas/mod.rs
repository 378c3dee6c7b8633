//! Atlas collection at scale on the schedulers clusters already run: a plan of shards, one
//! `hspi collect --plan FILE --shard I` per shard (Slurm array task or Kubernetes indexed job),
//! then `hspi dataset merge`.

pub mod k8s;
pub mod plan;
pub mod slurm;

pub use plan::{Plan, Shard};
