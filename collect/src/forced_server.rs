//! A llama-server the user names as a teacher-forced reference engine: the same engine as the
//! provider's, where one is at hand, gives references bit for bit (a provider's answer it
//! reproduces is that platform's, beyond the format evidence's margins). Each generated position
//! is one `/completion` request for the next token after the context so far (`n_predict` 1,
//! temperature 0, the top list), pinned to one slot: the prompt evaluated in one batch (its cache
//! off, as an audit's requests ask), every later position as one token on the cache, as the
//! server does while generating, so its logits are those generation computed.

use std::time::Duration;

use hspi_datasets::{Logprob, Platform, TokenStep, TopEntry};
use serde::Deserialize;

use crate::error::{CollectError, Result};

/// A llama-server at `base` (`http://host:port`), computing `platform`.
pub struct ServerReference {
    base: String,
    platform: Platform,
    http: reqwest::blocking::Client,
}

#[derive(Deserialize)]
struct Completion {
    completion_probabilities: Vec<Position>,
}

#[derive(Deserialize)]
struct Position {
    top_logprobs: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: u32,
    token: String,
    #[serde(default)]
    bytes: Option<Vec<u8>>,
    /// Kept as printed: llama.cpp prints an f32's 17 digits, so its bits are recoverable.
    logprob: serde_json::Number,
}

/// An engine the user names, `URL=PLATFORM` after `flag`: its base URL (`http://host:port`, any
/// `/v1/...` path cut) and the platform it runs, which hspi takes on the user's word.
pub(crate) fn engine_spec(flag: &str, spec: &str) -> Result<(String, Platform)> {
    let bad = |reason: String| CollectError::BadRequest(format!("{flag} {spec}: {reason}"));
    let (url, platform) = spec
        .split_once('=')
        .ok_or_else(|| bad("write it URL=PLATFORM (the platform the engine runs)".into()))?;
    let platform: Platform = platform.parse().map_err(|e| bad(format!("{e}")))?;
    let base = url
        .trim_end_matches('/')
        .trim_end_matches("/v1/completions")
        .trim_end_matches("/v1/chat/completions")
        .trim_end_matches("/v1")
        .to_string();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        return Err(bad(format!("{url} is no http(s) URL")));
    }
    Ok((base, platform))
}

impl ServerReference {
    /// A reference server at `spec`, written `URL=PLATFORM` (`http://127.0.0.1:8081=cpu-avx2/
    /// llamacpp-11434/f16/bs1`: the platform it runs, which hspi takes on the user's word).
    pub fn parse(spec: &str) -> Result<ServerReference> {
        let flag = "--reference-server";
        let bad = |reason: String| CollectError::BadRequest(format!("{flag} {spec}: {reason}"));
        let (base, platform) = engine_spec(flag, spec)?;
        let http = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(120))
            .build()
            .map_err(|e| bad(e.to_string()))?;
        Ok(ServerReference {
            base,
            platform,
            http,
        })
    }

    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Whether the server answers its health check: before any paid request is made.
    pub fn check(&self) -> Result<()> {
        let url = format!("{}/health", self.base);
        let response = self.http.get(&url).send().map_err(|e| CollectError::Http {
            url: url.clone(),
            reason: format!("the reference server does not answer: {e}"),
        })?;
        if !response.status().is_success() {
            return Err(CollectError::Http {
                url,
                reason: format!("the reference server is not ready: {}", response.status()),
            });
        }
        Ok(())
    }

    /// The steps at each generated position of `context` (`prompt_len..`): the provider's token
    /// with the logprob the server gives it, and the server's `top` best. A provider's token the
    /// server does not list among its best has no logprob here (this is not its engine).
    pub fn steps(&self, context: &[u32], prompt_len: usize, top: usize) -> Result<Vec<TokenStep>> {
        // As many as the answer lists: llama-server's values depend on how many it is asked for
        // (measured: 20 instead of 5 moves the first logprob by 4 ulps).
        let listed = top.max(1);
        let mut steps = Vec::with_capacity(context.len().saturating_sub(prompt_len));
        for k in prompt_len..context.len() {
            // The prompt in one batch, as an audit's request (`cache_prompt: false`) had it
            // evaluated; each later position on the cache, one token, as generation did.
            let body = serde_json::json!({
                "prompt": &context[..k], "n_predict": 1, "n_probs": listed,
                "cache_prompt": k > prompt_len, "temperature": 0.0, "id_slot": 0,
            });
            let position = self.next(&body)?;
            let id = context[k];
            let entries: Vec<TopEntry> = position
                .top_logprobs
                .iter()
                .map(|e| self.entry(e))
                .collect::<Result<_>>()?;
            let own = position.top_logprobs.iter().position(|e| e.id == id);
            let (token, bytes) = match own {
                Some(i) => (
                    entries[i].token.clone(),
                    position.top_logprobs[i].bytes.clone(),
                ),
                None => (String::new(), None),
            };
            steps.push(TokenStep {
                token,
                id: Some(id),
                bytes,
                logprob: own.map(|i| entries[i].logprob.clone()),
                top: entries,
            });
        }
        Ok(steps)
    }

    fn next(&self, body: &serde_json::Value) -> Result<Position> {
        let url = format!("{}/completion", self.base);
        let failed = |reason: String| CollectError::Http {
            url: url.clone(),
            reason,
        };
        let response = self
            .http
            .post(&url)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .map_err(|e| failed(e.to_string()))?;
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
                "no llama-server completion with n_probs ({e}): {}",
                text.chars().take(300).collect::<String>()
            ))
        })?;
        parsed
            .completion_probabilities
            .into_iter()
            .next()
            .ok_or_else(|| failed("the completion lists no token".into()))
    }

    fn entry(&self, e: &Entry) -> Result<TopEntry> {
        let printed = e.logprob.to_string();
        let logprob = Logprob::parse(&printed).map_err(|err| CollectError::Http {
            url: format!("{}/completion", self.base),
            reason: format!("logprob {printed}: {err}"),
        })?;
        Ok(TopEntry {
            token: e.token.clone(),
            id: Some(e.id),
            logprob,
        })
    }
}
