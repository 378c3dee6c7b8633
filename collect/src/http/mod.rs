//! Remote OpenAI-compatible endpoints as targets. One file per concern: the client, the budget,
//! the journal; the wire formats are API shapes in the hspi-api crate.

mod budget;
mod client;
mod journal;

pub use crate::error::BudgetReached;
pub use budget::{Budget, BudgetLimits, Spent};
pub use client::{Client, ClientConfig, RawResponse, SendError, TransportFailures};
pub use hspi_api::{shape_for_url, shape_named, ApiShape, Parsed, RequestOptions, SHAPES};
pub use journal::{request_key, Journal, JournalEntry};

use std::sync::Arc;

use hspi_datasets::{manifest::unix_now, AskedAs, Platform, Probe, ProbeInput};

use crate::error::{CollectError, Result};
use crate::target::{Answer, Target};

/// Extra fetches of a 200 answer that does not parse before giving up.
const MALFORMED_REFETCHES: usize = 2;

#[derive(Clone)]
pub struct HttpTarget {
    pub id: String,
    pub url: String,
    pub shape: &'static dyn ApiShape,
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
        self.answer_probe(probe, true)
    }

    /// Ask `probe` again, never from the journal (a repeat that checks the endpoint is
    /// deterministic); the answer is journaled as any other.
    pub fn answer_fresh(&self, probe: &Probe) -> Result<Answer> {
        self.answer_probe(probe, false)
    }

    fn answer_probe(&self, probe: &Probe, replay: bool) -> Result<Answer> {
        let ProbeInput::Prompt { text, params } = &probe.input else {
            return Err(CollectError::ProbeMismatch {
                probe: probe.id.clone(),
                model: self.model.clone(),
                reason: "endpoints answer text prompts (`hspi probe prompts`)".into(),
            });
        };
        let body = self.shape.body(&self.model, text, params, &self.options);
        let key = request_key(&self.url, &body);
        let http_err = |reason: String| CollectError::Http {
            url: self.url.clone(),
            reason,
        };
        let worst = (text.len() as u64 + 64, params.max_tokens as u64);
        // A 200 whose body is no valid answer (a truncated transfer, a proxy's page) is fetched
        // again, a bounded number of times; the journal keeps every body it got. Each body is
        // parsed once, and the budget settled from that parse.
        let mut replayed = if replay {
            self.journal.replay(&key)
        } else {
            None
        };
        let mut parsed = None;
        for _ in 0..=MALFORMED_REFETCHES {
            let (raw, held) = match replayed.take() {
                Some(raw) => (raw, false),
                None => self.fetch(&key, &body, worst)?,
            };
            if !raw.is_success() {
                let body: String = raw.body.chars().take(200).collect();
                let reason = format!("HTTP {}: {body}", raw.status);
                return Err(if raw.status == 429 || raw.status >= 500 {
                    CollectError::Transport {
                        url: self.url.clone(),
                        reason,
                    }
                } else {
                    http_err(reason)
                });
            }
            let attempt = self.shape.parse(&raw.body);
            if attempt.is_err() && held {
                self.client.count_failure(|f| f.malformed += 1);
            }
            if held {
                let used = attempt.as_ref().ok().and_then(|p| p.usage.as_ref());
                let used = used.map(|u| (u.prompt_tokens, u.completion_tokens));
                self.budget.settle(worst, used);
            }
            let ok = attempt.is_ok();
            parsed = Some(attempt);
            if ok {
                break;
            }
        }
        let parsed = parsed
            .expect("at least one attempt")
            .map_err(|source| CollectError::Api {
                url: self.url.clone(),
                source,
            })?;
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

    /// Send under the budget, journal the answer before anything reads it. Every attempt sent
    /// holds a reservation; all but a successful last one settle here to no tokens spent (a
    /// refused or failed request returns none), the request itself counting. Returns whether a
    /// successful answer's reservation is still held, to be settled from its parsed usage.
    fn fetch(&self, key: &str, body: &str, worst: (u64, u64)) -> Result<(RawResponse, bool)> {
        let reservations = std::cell::Cell::new(0u32);
        let may_send = || -> std::result::Result<(), BudgetReached> {
            self.budget.reserve(worst.0, worst.1)?;
            reservations.set(reservations.get() + 1);
            Ok(())
        };
        let attempts = self.client.post(&self.url, body, &may_send);
        let held = reservations.get();
        let answered = matches!(&attempts.result, Ok(r) if r.is_success());
        let failed = if answered {
            held.saturating_sub(1)
        } else {
            held
        };
        for _ in 0..failed {
            self.budget.settle(worst, Some((0, 0)));
        }
        let raw = attempts.result.map_err(|e| match e {
            SendError::Budget { reached, after } => CollectError::Budget { reached, after },
            other => CollectError::Transport {
                url: self.url.clone(),
                reason: other.to_string(),
            },
        })?;
        self.journal.append(&JournalEntry {
            key: key.into(),
            url: self.url.clone(),
            request: body.into(),
            response: raw.clone(),
            at_unix: unix_now(),
        })?;
        Ok((raw, answered && held > 0))
    }
}

impl Target for HttpTarget {
    fn id(&self) -> &str {
        &self.id
    }
    fn platform(&self) -> Option<&Platform> {
        self.platform.as_ref()
    }
    fn asked_as(&self) -> AskedAs {
        self.shape.asked_as()
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
