//! Engines the user runs, named as teacher-forced references of their own platforms: a
//! llama-server asked position by position (`--reference-server`, `crate::forced_server`), a
//! completions endpoint scoring every position in one request with `prompt_logprobs`
//! (`--reference-endpoint`, vLLM's; `crate::forced_endpoint`), or hspi's own pass on this
//! machine's GPU (`--reference-gpu`, `crate::forced_gpu`). One seam: each is checked before
//! any provider request is paid for, and scores the provider's exact tokens.

use std::path::Path;

use hspi_datasets::{NumericFormat, Platform, TokenStep};

use crate::error::Result;
use crate::forced_endpoint::EndpointReference;
use crate::forced_gpu::GpuReference;
use crate::forced_server::ServerReference;

pub enum ReferenceEngine {
    LlamaServer(ServerReference),
    Completions(EndpointReference),
    Gpu(GpuReference),
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

    /// `--reference-gpu FORMAT`: the weights at `weights` loaded on this machine's GPU.
    pub fn gpu(format: NumericFormat, weights: &Path) -> Result<ReferenceEngine> {
        Ok(ReferenceEngine::Gpu(GpuReference::load(format, weights)?))
    }

    /// The engines `--reference-server`, `--reference-endpoint` and `--reference-gpu` name, in
    /// that order (the GPU's loading the model's `weights`).
    pub fn named(
        servers: &[String],
        endpoints: &[String],
        key_env: Option<&str>,
        gpus: &[NumericFormat],
        weights: &Path,
    ) -> Result<Vec<ReferenceEngine>> {
        let mut engines: Vec<ReferenceEngine> = servers
            .iter()
            .map(|s| ReferenceEngine::llama_server(s))
            .chain(
                endpoints
                    .iter()
                    .map(|e| ReferenceEngine::endpoint(e, key_env)),
            )
            .collect::<Result<_>>()?;
        for format in gpus {
            engines.push(ReferenceEngine::gpu(*format, weights)?);
        }
        Ok(engines)
    }

    pub fn platform(&self) -> &Platform {
        match self {
            ReferenceEngine::LlamaServer(s) => s.platform(),
            ReferenceEngine::Completions(e) => e.platform(),
            ReferenceEngine::Gpu(g) => g.platform(),
        }
    }

    /// Whether it answers its health check (and, for an endpoint, which model it serves).
    pub fn check(&mut self) -> Result<()> {
        match self {
            ReferenceEngine::LlamaServer(s) => s.check(),
            ReferenceEngine::Completions(e) => e.check(),
            // Loaded on the GPU when named.
            ReferenceEngine::Gpu(_) => Ok(()),
        }
    }

    /// The steps at each generated position of `context` (`prompt_len..`).
    pub fn steps(
        &mut self,
        context: &[u32],
        prompt_len: usize,
        top: usize,
    ) -> Result<Vec<TokenStep>> {
        match self {
            ReferenceEngine::LlamaServer(s) => s.steps(context, prompt_len, top),
            ReferenceEngine::Completions(e) => e.steps(context, prompt_len, top),
            ReferenceEngine::Gpu(g) => g.steps(context, prompt_len, top),
        }
    }
}
