//! Remote OpenAI-compatible endpoints as targets. One file per concern: the request, the response
//! shapes (chat-style and legacy logprobs), the client, the budget, the journal.

mod budget;
mod chat_logprobs;
mod client;
mod journal;
mod legacy_logprobs;
mod request;
pub mod response;

pub use budget::{Budget, BudgetLimits, Spent};
pub use client::{Client, ClientConfig, RawResponse};
pub use journal::{request_key, Journal, JournalEntry};
pub use request::{ApiShape, RequestOptions};

use std::sync::Arc;

use hspi_datasets::{manifest::unix_now, Platform, Probe, ProbeInput};

use crate::error::{CollectError, Result};
use crate::target::{Answer, Target};

/// Extra fetches of a 200 answer that does not parse before giving up.
const MALFORMED_REFETCHES: usize = 2;

#[derive(Clone)]
pub struct HttpTarget {
    pub id: String,
    pub url: String,
    pub shape: ApiShape,
    pub model: String,
    pub options: RequestOptions,
    pub platform: Option<Platform>,
    pub client: Arc<Client>,
    pub budget: Arc<Budget>,
    pub journal: Arc<Journal>,
    pub concurrency: usize,
    /// Accept an answer whose `model` differs from the one asked for.
    pub allow_model_mismatch: bool,
    /// Refuse answers without logprobs (the default: bit features need them).
    pub require_logprobs: bool,
}

impl HttpTarget {
    pub fn target_id(url: &str, model: &str) -> String {
        format!("{url}#{model}")
    }

    fn answer_one(&self, probe: &Probe) -> Result<Answer> {
        let ProbeInput::Prompt { text, params } = &probe.input else {
            return Err(CollectError::ProbeMismatch {
                probe: probe.id.clone(),
                model: self.model.clone(),
                reason: "endpoints answer text prompts (`hspi probe prompts`)".into(),
            });
        };
        let body = request::body(self.shape, &self.model, text, params, &self.options);
        let key = request_key(&self.url, &body);
        let http_err = |reason: String| CollectError::Http {
            url: self.url.clone(),
            reason,
        };
        let (prompt_bound, max_tokens) = (text.len() as u64 + 64, params.max_tokens as u64);
        // A 200 whose body is no valid answer (a truncated transfer, a proxy's page) is fetched
        // again, a bounded number of times; the journal keeps every body it got.
        let mut replayed = self.journal.replay(&key);
        let mut parsed = Err(String::new());
        for _ in 0..=MALFORMED_REFETCHES {
            let raw = match replayed.take() {
                Some(raw) => raw,
                None => self.fetch(&key, &body, prompt_bound, max_tokens)?,
            };
            if !raw.is_success() {
                let body: String = raw.body.chars().take(200).collect();
                return Err(http_err(format!("HTTP {}: {body}", raw.status)));
            }
            parsed = response::parse(&raw.body);
            if parsed.is_ok() {
                break;
            }
        }
        let parsed = parsed.map_err(http_err)?;
        if let Some(served) = &parsed.model {
            if !self.allow_model_mismatch
                && served != &self.model
                && !served.ends_with(&format!("/{}", self.model))
            {
                return Err(http_err(format!(
                    "asked for model '{}' but the endpoint answered as '{served}'\nhint: pass --allow-model-mismatch if the endpoint renames models",
                    self.model
                )));
            }
        }
        if self.require_logprobs && !parsed.has_logprobs {
            return Err(http_err(
                "this endpoint returns no logprobs: only text-mode evidence is possible\nhint: pass --text-only to collect the generated text alone".into(),
            ));
        }
        Ok(Answer {
            outputs: parsed.outputs,
            usage: parsed.usage,
            served_model: parsed.model,
            system_fingerprint: parsed.system_fingerprint,
        })
    }

    /// Send under the budget, journal the answer before anything reads it.
    fn fetch(
        &self,
        key: &str,
        body: &str,
        prompt_bound: u64,
        max_tokens: u64,
    ) -> Result<RawResponse> {
        let reserved = (prompt_bound, max_tokens);
        let reservations = std::cell::Cell::new(0u32);
        let may_send = || -> std::result::Result<(), String> {
            self.budget.reserve(prompt_bound, max_tokens)?;
            reservations.set(reservations.get() + 1);
            Ok(())
        };
        let attempts = self.client.post(&self.url, body, &may_send);
        // Every attempt sent holds a reservation; all but a successful last one settle to nothing
        // spent on tokens (a refused or failed request returns none), the request itself counting.
        let held = reservations.get();
        let result = attempts.result.map_err(|reason| {
            if reason.starts_with("budget reached") {
                CollectError::Budget(reason)
            } else {
                CollectError::Http {
                    url: self.url.clone(),
                    reason,
                }
            }
        });
        for i in 0..held {
            let last_ok = i + 1 == held && matches!(&result, Ok(r) if r.is_success());
            if last_ok {
                let used = result
                    .as_ref()
                    .ok()
                    .and_then(|r| response::parse(&r.body).ok())
                    .and_then(|p| p.usage)
                    .map(|u| (u.prompt_tokens, u.completion_tokens));
                self.budget.settle(reserved, used);
            } else {
                self.budget.settle(reserved, Some((0, 0)));
            }
        }
        let raw = result?;
        self.journal.append(&JournalEntry {
            key: key.into(),
            url: self.url.clone(),
            request: body.into(),
            response: raw.clone(),
            at_unix: unix_now(),
        })?;
        Ok(raw)
    }
}

impl Target for HttpTarget {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        self.platform.as_ref()
    }
    fn batch_size(&self) -> usize {
        self.concurrency.max(1)
    }
    /// The batch's requests go out concurrently; answers come back in probe order.
    fn answer(&mut self, probes: &[&Probe]) -> Result<Vec<Answer>> {
        let this = &*self;
        let results: Vec<Result<Answer>> = std::thread::scope(|s| {
            let handles: Vec<_> = probes
                .iter()
                .map(|p| s.spawn(move || this.answer_one(p)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(CollectError::Http {
                            url: this.url.clone(),
                            reason: "a request worker panicked".into(),
                        })
                    })
                })
                .collect()
        });
        results.into_iter().collect()
    }
}
