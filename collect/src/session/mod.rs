//! Collection sessions, each a dataset opened (created, resumed or replaced) and filled: local
//! platforms, an endpoint, or one shard of an atlas plan. They take typed options, not command
//! lines; the binary only parses flags into them.

mod endpoint;
mod forced;
mod local;
mod shard;

pub use endpoint::{api_key_from_env, EndpointCollected, EndpointOptions, EndpointSession};
pub use forced::ForcedSession;
pub use local::{collect_local, LocalCollection, LocalSummary};
pub use shard::{shard_index, ShardAssignment};

use hspi_datasets::{manifest::unix_now, HostProvenance, ProbeSet, ProbeSetInfo, Session};

/// A session record for a dataset's manifest: when, what command, on what host.
pub fn new_session(command: &str) -> Session {
    Session {
        started_unix: unix_now(),
        command: command.to_string(),
        provenance: HostProvenance::detect(crate::engine_versions()),
    }
}

pub fn probe_set_info(probes: &ProbeSet) -> ProbeSetInfo {
    ProbeSetInfo {
        hash: probes.hash(),
        count: probes.probes.len(),
        generator: probes.generator.clone(),
        seed: probes.seed,
    }
}
