//! Engines the user runs, named as teacher-forced references of their own platforms: a
//! llama-server asked position by position (`--reference-server`, `crate::forced_server`), or a
//! completions endpoint scoring every position in one request with `prompt_logprobs`
//! (`--reference-endpoint`, vLLM's; `crate::forced_endpoint`). One seam: each is checked before
//! any provider request is paid for, and scores the provider's exact tokens.

use hspi_datasets::{Platform, TokenStep};

use crate::error::Result;
use crate::forced_endpoint::EndpointReference;
use crate::forced_server::ServerReference;

pub enum ReferenceEngine {
    LlamaServer(ServerReference),
    Completions(EndpointReference),
}

impl ReferenceEngine {
    /// `--reference-server URL=PLATFORM`.
    pub fn llama_server(spec: &str) -> Result<ReferenceEngine> {
        Ok(ReferenceEngine::LlamaServer(ServerReference::parse(spec)?))
    }

    /// `--reference-endpoint URL=PLATFORM`, its key in the environment variable `key_env`.
    pub fn endpoint(spec: &str, key_env: Option<&str>) -> Result<ReferenceEngine> {
        Ok(ReferenceEngine::Completions(EndpointReference::parse(
            spec, key_env,
        )?))
    }

    /// The engines `--reference-server` and `--reference-endpoint` name, in that order.
    pub fn named(
        servers: &[String],
        endpoints: &[String],
        key_env: Option<&str>,
    ) -> Result<Vec<ReferenceEngine>> {
        servers
            .iter()
            .map(|s| ReferenceEngine::llama_server(s))
            .chain(
                endpoints
                    .iter()
                    .map(|e| ReferenceEngine::endpoint(e, key_env)),
            )
            .collect()
    }

    pub fn platform(&self) -> &Platform {
        match self {
            ReferenceEngine::LlamaServer(s) => s.platform(),
            ReferenceEngine::Completions(e) => e.platform(),
        }
    }

    /// Whether it answers its health check (and, for an endpoint, which model it serves).
    pub fn check(&mut self) -> Result<()> {
        match self {
            ReferenceEngine::LlamaServer(s) => s.check(),
            ReferenceEngine::Completions(e) => e.check(),
        }
    }

    /// The steps at each generated position of `context` (`prompt_len..`).
    pub fn steps(&self, context: &[u32], prompt_len: usize, top: usize) -> Result<Vec<TokenStep>> {
        match self {
            ReferenceEngine::LlamaServer(s) => s.steps(context, prompt_len, top),
            ReferenceEngine::Completions(e) => e.steps(context, prompt_len, top),
        }
    }
}
