//! `hspi collect --endpoint URL`: collection from an OpenAI-compatible endpoint, paying safely.

use std::path::PathBuf;
use std::time::Duration;

use hspi_collect::http::BudgetLimits;
use hspi_collect::session::{api_key_from_env, EndpointOptions};

use crate::error::{bad_value, CliError};

#[derive(Debug, Clone, Default, clap::Args)]
pub struct EndpointArgs {
    /// Collect from this OpenAI-compatible URL (…/v1/chat/completions or …/v1/completions).
    #[arg(long, help_heading = "Endpoint")]
    pub endpoint: Option<String>,
    /// The API shape: chat, completions or sglang (default: from the URL's path)
    #[arg(long, help_heading = "Endpoint")]
    pub api: Option<String>,
    /// The platform the endpoint is known to run (for reference datasets), e.g.
    /// cpu-avx2/llamacpp-11434/q8_0/bs1. Without it records carry no platform label.
    #[arg(long, help_heading = "Endpoint")]
    pub label: Option<String>,
    /// Name of the environment variable holding the API key (never printed or stored).
    #[arg(long, help_heading = "Endpoint")]
    pub api_key_env: Option<String>,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 1, help_heading = "Endpoint")]
    pub concurrency: usize,
    /// Requests per second at most.
    #[arg(long, help_heading = "Endpoint")]
    pub rate_limit: Option<f64>,
    /// Seconds before a request is abandoned (and retried).
    #[arg(long, default_value_t = 120.0, help_heading = "Endpoint")]
    pub timeout: f64,
    /// Retries per request on 429/5xx/timeouts/resets.
    #[arg(long, default_value_t = 5, help_heading = "Endpoint")]
    pub retries: u32,
    /// Stop before sending more than this many requests (retries included).
    #[arg(long, help_heading = "Budget and cost")]
    pub max_requests: Option<u64>,
    /// Stop before the output tokens could exceed this.
    #[arg(long, help_heading = "Budget and cost")]
    pub max_output_tokens: Option<u64>,
    /// Stop before the cost could exceed this (with --price-input/--price-output).
    #[arg(long, help_heading = "Budget and cost")]
    pub max_cost: Option<f64>,
    /// Price per million input tokens.
    #[arg(long, default_value_t = 0.0, help_heading = "Budget and cost")]
    pub price_input: f64,
    /// Price per million output tokens.
    #[arg(long, default_value_t = 0.0, help_heading = "Budget and cost")]
    pub price_output: f64,
    /// Journal of raw responses (default: DIR/journal.jsonl). Reused answers cost nothing.
    #[arg(long, help_heading = "Output")]
    pub journal: Option<PathBuf>,
    /// Accept answers without logprobs (text-only evidence).
    #[arg(long, help_heading = "Endpoint")]
    pub text_only: bool,
    /// Accept an answer whose `model` differs from --model.
    #[arg(long, help_heading = "Endpoint")]
    pub allow_model_mismatch: bool,
    /// Send only OpenAI's own fields (no cache_prompt / repeat_penalty).
    #[arg(long, help_heading = "Endpoint")]
    pub strict_openai: bool,
    /// Tokens to generate per generated prompt (with --probes N).
    #[arg(long, default_value_t = 8, help_heading = "Pack and prompts")]
    pub max_tokens: u32,
    /// Logprob alternatives per token (with --probes N). OpenAI and most hosts return at most 20.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=20), help_heading = "Pack and prompts")]
    pub top_logprobs: u32,
}

impl EndpointArgs {
    pub fn options(&self, model: &str) -> Result<EndpointOptions, CliError> {
        Ok(EndpointOptions {
            url: self.endpoint.clone().unwrap_or_default(),
            api: self.api.clone(),
            model: model.to_string(),
            label: (self.label.as_deref().map(str::parse).transpose())
                .map_err(bad_value("--label"))?,
            api_key: api_key_from_env(self.api_key_env.as_deref())?,
            concurrency: self.concurrency,
            rate_limit: self.rate_limit,
            timeout: Duration::from_secs_f64(self.timeout),
            retries: self.retries,
            budget: BudgetLimits {
                max_requests: self.max_requests,
                max_output_tokens: self.max_output_tokens,
                max_cost: self.max_cost,
                price_input_per_m: self.price_input,
                price_output_per_m: self.price_output,
            },
            journal: self.journal.clone(),
            text_only: self.text_only,
            allow_model_mismatch: self.allow_model_mismatch,
            strict_openai: self.strict_openai,
        })
    }
}
