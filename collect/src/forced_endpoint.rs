//! An engine the user runs, named as a teacher-forced reference through its OpenAI completions
//! endpoint: vLLM's, which takes the prompt as token ids and returns `prompt_logprobs` — for
//! every position, the logprob of the token at that position and the engine's top K. One request
//! scores every generated position of an answer (the prompt plus the provider's tokens). This is
//! Token-DiFR's reference (a local vLLM, or the model maker's endpoint), used the way hspi's own
//! engines are: the platform is taken on the user's word and named in the report.
//!
//! Refused before any provider request is paid for: an endpoint that fails its health check or
//! lists no model. Refused on the answer it scores: one that returns other token ids than it was
//! given, or fewer positions.

use std::collections::BTreeMap;
use std::time::Duration;

use hspi_datasets::{Logprob, Platform, TokenStep, TopEntry};
use serde::Deserialize;

use crate::error::{CollectError, Result};

/// A completions endpoint at `base` (`http://host:port`) computing `platform`.
pub struct EndpointReference {
    base: String,
    platform: Platform,
    /// The model name the endpoint serves (its `/v1/models`), asked for in every request.
    model: String,
    api_key: Option<String>,
    http: reqwest::blocking::Client,
}

#[derive(Deserialize)]
struct Completion {
    choices: Vec<Choice>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    prompt_logprobs: Option<Vec<Option<BTreeMap<String, Entry>>>>,
    #[serde(default)]
    prompt_token_ids: Option<Vec<u32>>,
}

#[derive(Deserialize)]
struct Entry {
    /// Kept as printed (Python's repr of the f32 value: its bits are recoverable).
    logprob: serde_json::Number,
    #[serde(default)]
    rank: Option<u64>,
    #[serde(default)]
    decoded_token: Option<String>,
}

impl EndpointReference {
    /// A reference endpoint at `spec`, written `URL=PLATFORM` (`http://127.0.0.1:8000=cpu-avx2/
    /// vllm-0.32.0/f32/bs1`), with the API key in the environment variable `key_env` if named.
    pub fn parse(spec: &str, key_env: Option<&str>) -> Result<EndpointReference> {
        let flag = "--reference-endpoint";
        let bad = |reason: String| CollectError::BadRequest(format!("{flag} {spec}: {reason}"));
        let (base, platform) = crate::forced_server::engine_spec(flag, spec)?;
        let api_key = match key_env {
            Some(var) => Some(std::env::var(var).map_err(|_| {
                bad(format!(
                    "the environment variable {var} holding its key is not set"
                ))
            })?),
            None => None,
        };
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Ok(EndpointReference {
            base,
            platform,
            model: String::new(),
            api_key,
            http,
        })
    }

    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    fn get(&self, path: &str) -> Result<serde_json::Value> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.get(&url);
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let failed = |reason: String| CollectError::Http {
            url: url.clone(),
            reason,
        };
        let response = request
            .send()
            .map_err(|e| failed(format!("the reference endpoint does not answer: {e}")))?;
        if !response.status().is_success() {
            return Err(failed(format!(
                "the reference endpoint is not ready: {}",
                response.status()
            )));
        }
        let text = response.text().map_err(|e| failed(e.to_string()))?;
        Ok(serde_json::from_str(&text).unwrap_or(serde_json::Value::Null))
    }

    /// Whether the endpoint answers its health check and names the model it serves: before
    /// any paid request is made.
    pub fn check(&mut self) -> Result<()> {
        let models = self.get("/v1/models")?;
        self.model = models["data"][0]["id"]
            .as_str()
            .ok_or_else(|| CollectError::Http {
                url: format!("{}/v1/models", self.base),
                reason: format!("the reference endpoint lists no model: {models}"),
            })?
            .to_string();
        Ok(())
    }

    /// The steps at each generated position of `context` (`prompt_len..`): the provider's token
    /// with the logprob the endpoint gives it (it always scores the token it is given), and the
    /// endpoint's `top` best.
    pub fn steps(&self, context: &[u32], prompt_len: usize, top: usize) -> Result<Vec<TokenStep>> {
        let url = format!("{}/v1/completions", self.base);
        let failed = |reason: String| CollectError::Http {
            url: url.clone(),
            reason,
        };
        // As many alternatives as the answer lists: engines' values can move with the number
        // asked for (vLLM #44319).
        let body = serde_json::json!({
            "model": self.model, "prompt": context, "max_tokens": 1, "temperature": 0.0,
            "prompt_logprobs": top.max(1), "return_token_ids": true,
        });
        let mut request = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let text = response.text().map_err(|e| failed(e.to_string()))?;
        if !status.is_success() {
            return Err(failed(format!(
                "{status}: {}",
                text.chars().take(300).collect::<String>()
            )));
        }
        let parsed: Completion = serde_json::from_str(&text).map_err(|e| {
            failed(format!(
                "no completion with prompt_logprobs ({e}): {}",
                text.chars().take(300).collect::<String>()
            ))
        })?;
        let choice = parsed
            .choices
            .into_iter()
            .next()
            .ok_or_else(|| failed("the completion has no choice".into()))?;
        if let Some(ids) = &choice.prompt_token_ids {
            if ids.as_slice() != context {
                return Err(failed(format!(
                    "the reference endpoint read other tokens than it was given ({} ids for {}): \
                     it is not scoring the provider's answer",
                    ids.len(),
                    context.len()
                )));
            }
        }
        let positions = choice
            .prompt_logprobs
            .ok_or_else(|| failed("the completion has no prompt_logprobs".into()))?;
        if positions.len() != context.len() {
            return Err(failed(format!(
                "prompt_logprobs for {} positions, {} given",
                positions.len(),
                context.len()
            )));
        }
        let mut steps = Vec::with_capacity(context.len() - prompt_len);
        for (k, id) in context.iter().enumerate().skip(prompt_len) {
            let position = positions[k]
                .as_ref()
                .ok_or_else(|| failed(format!("position {k} has no prompt_logprobs")))?;
            let entry = |(key, e): (&String, &Entry)| -> Result<(u32, u64, TopEntry)> {
                let printed = e.logprob.to_string();
                let logprob = Logprob::parse(&printed)
                    .map_err(|err| failed(format!("logprob {printed}: {err}")))?;
                let token_id: u32 = key
                    .parse()
                    .map_err(|_| failed(format!("token id {key:?} is no number")))?;
                let entry = TopEntry {
                    token: e.decoded_token.clone().unwrap_or_default(),
                    id: Some(token_id),
                    logprob,
                };
                Ok((token_id, e.rank.unwrap_or(u64::MAX), entry))
            };
            let mut entries = position.iter().map(entry).collect::<Result<Vec<_>>>()?;
            let own = entries
                .iter()
                .find(|(i, _, _)| i == id)
                .map(|(_, _, e)| e.clone())
                .ok_or_else(|| {
                    failed(format!(
                        "position {k} scores no token {id}: the endpoint did not score the \
                         provider's tokens"
                    ))
                })?;
            // The top list: the endpoint's best `top`, by rank (the given token is listed
            // besides them when it ranks lower).
            entries.sort_by_key(|(i, rank, _)| (*rank, *i));
            let listed: Vec<TopEntry> = entries
                .into_iter()
                .filter(|(_, rank, _)| *rank as usize <= top)
                .map(|(_, _, e)| e)
                .take(top)
                .collect();
            steps.push(TokenStep {
                token: own.token.clone(),
                id: Some(*id),
                bytes: None,
                logprob: Some(own.logprob),
                top: listed,
            });
        }
        Ok(steps)
    }
}
