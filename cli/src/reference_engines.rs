//! Engines the user runs as references (`--reference-server`, `--reference-endpoint`,
//! `--reference-gpu`), named
//! alike wherever references are computed: a fresh audit, `hspi dataset references`.

#[derive(Debug, Default, clap::Args)]
pub struct ReferenceEngineArgs {
    /// With --weights: a llama-server to compute references too, written URL=PLATFORM (the
    /// platform it runs, e.g. http://127.0.0.1:8081=cpu-avx2/llamacpp-11434/f16/bs1;
    /// repeatable). Where it is the provider's engine, its references are bit for bit.
    #[arg(long, value_name = "URL=PLATFORM", requires = "weights")]
    pub reference_server: Vec<String>,
    /// With --weights: an engine you run, scoring the provider's tokens through its completions
    /// endpoint with prompt logprobs (vLLM's: one request per answer), written URL=PLATFORM
    /// (e.g. http://127.0.0.1:8000=cpu-avx2/vllm-0.32.0/f32/bs1; repeatable). The platform is
    /// taken on your word and named in the report.
    #[arg(long, value_name = "URL=PLATFORM", requires = "weights")]
    pub reference_endpoint: Vec<String>,
    /// With --weights: hspi's own pass on this machine's NVIDIA GPU as a reference engine, at
    /// cuBLAS's f32, tf32, f16 or bf16 (comma-separated; needs a build with --features cuda):
    /// every position of an answer in one pass, for a model too large for the CPU's formats.
    #[arg(
        long,
        value_name = "FORMAT",
        value_delimiter = ',',
        requires = "weights"
    )]
    pub reference_gpu: Vec<hspi_datasets::NumericFormat>,
    /// Environment variable holding the reference endpoints' API key.
    #[arg(long, value_name = "VAR", requires = "reference_endpoint")]
    pub reference_key_env: Option<String>,
}

impl ReferenceEngineArgs {
    /// The engines named, parsed (not yet asked anything; the GPU's holding the model's
    /// `weights`).
    pub fn engines(
        &self,
        weights: &std::path::Path,
    ) -> Result<Vec<hspi_collect::teacher_forced::ReferenceEngine>, hspi_collect::CollectError>
    {
        hspi_collect::teacher_forced::ReferenceEngine::named(
            &self.reference_server,
            &self.reference_endpoint,
            self.reference_key_env.as_deref(),
            &self.reference_gpu,
            weights,
        )
    }
}
