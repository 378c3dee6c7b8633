//! Sending requests safely: timeouts, a shared rate limit, retries with exponential backoff and
//! full jitter that honour `Retry-After` on 429/503. The API key goes in a header only; it is never
//! part of a URL, a body, a journal entry or a message.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::error::{BudgetReached, CollectError};

/// Response headers worth keeping as provenance (never anything that could carry credentials).
const KEPT_HEADERS: [&str; 8] = [
    "server",
    "date",
    "content-type",
    "x-request-id",
    "openai-model",
    "openai-processing-ms",
    "retry-after",
    "via",
];

#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub timeout: Duration,
    pub max_retries: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// Requests per second across all workers (None: unlimited).
    pub rate_limit: Option<f64>,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            timeout: Duration::from_secs(120),
            max_retries: 5,
            backoff_base: Duration::from_millis(250),
            backoff_max: Duration::from_secs(30),
            rate_limit: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RawResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub elapsed_ms: u64,
}

impl RawResponse {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

pub struct Client {
    http: reqwest::blocking::Client,
    config: ClientConfig,
    api_key: Option<String>,
    next_slot: Mutex<Instant>,
    failures: Mutex<TransportFailures>,
}

/// Attempts that brought no usable answer, by cause: what an audit reports apart from its
/// verdict, so a flaky endpoint neither passes nor fails a claim by accident.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TransportFailures {
    /// HTTP 500, 502, 503, 504.
    pub server_errors: u64,
    /// HTTP 429.
    pub rate_limited: u64,
    /// Other HTTP errors (4xx): the request was refused.
    pub refused: u64,
    pub timeouts: u64,
    /// Connection refused, reset, or a body cut off.
    pub connection: u64,
    /// A 200 whose body is no valid answer.
    pub malformed: u64,
}

impl TransportFailures {
    pub fn total(&self) -> u64 {
        self.server_errors
            + self.rate_limited
            + self.refused
            + self.timeouts
            + self.connection
            + self.malformed
    }
}

impl std::fmt::Display for TransportFailures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = [
            (self.server_errors, "5xx"),
            (self.rate_limited, "429"),
            (self.refused, "other 4xx"),
            (self.timeouts, "timeouts"),
            (self.connection, "connection errors"),
            (self.malformed, "malformed bodies"),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if parts.is_empty() {
            write!(f, "none")
        } else {
            write!(f, "{}", parts.join(", "))
        }
    }
}

/// How a `post` that got no answer ended.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SendError {
    /// The budget refused the next attempt (`after`: why the attempt before it failed).
    #[error("{reached}{}", after.as_ref().map(|a| format!(" (after: {a})")).unwrap_or_default())]
    Budget {
        reached: BudgetReached,
        after: Option<String>,
    },
    #[error("gave up after {sent} attempts: {last}")]
    GaveUp { sent: u32, last: String },
}

/// What one `post` cost and how it ended.
#[derive(Debug)]
pub struct Attempts {
    pub sent: u32,
    pub result: Result<RawResponse, SendError>,
}

impl Client {
    pub fn new(config: ClientConfig, api_key: Option<String>) -> Result<Client, CollectError> {
        let http = reqwest::blocking::Client::builder()
            .timeout(config.timeout)
            .connect_timeout(Duration::from_secs(10).min(config.timeout))
            .user_agent(concat!("hspi/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| CollectError::Http {
                url: String::new(),
                reason: format!("cannot build the HTTP client: {e}"),
            })?;
        Ok(Client {
            http,
            config,
            api_key,
            next_slot: Mutex::new(Instant::now()),
            failures: Mutex::new(TransportFailures::default()),
        })
    }

    /// The failed attempts so far.
    pub fn failures(&self) -> TransportFailures {
        *self.failures.lock().expect("failure counter lock")
    }

    pub(crate) fn count_failure(&self, count: impl FnOnce(&mut TransportFailures)) {
        count(&mut self.failures.lock().expect("failure counter lock"));
    }

    /// A server echoing the key back must not get it into a journal or a message.
    fn scrub(&self, text: &str) -> String {
        match &self.api_key {
            Some(key) if text.contains(key.as_str()) => text.replace(key.as_str(), "[redacted]"),
            _ => text.to_string(),
        }
    }

    fn wait_for_slot(&self) {
        let Some(rps) = self.config.rate_limit.filter(|r| *r > 0.0) else {
            return;
        };
        let wait = {
            let mut next = self.next_slot.lock().expect("rate limiter lock");
            let now = Instant::now();
            let slot = (*next).max(now);
            *next = slot + Duration::from_secs_f64(1.0 / rps);
            slot - now
        };
        std::thread::sleep(wait);
    }

    fn backoff(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = self
            .config
            .backoff_base
            .saturating_mul(1 << attempt.min(16))
            .min(self.config.backoff_max);
        let jittered = Duration::from_secs_f64(rand::rng().random_range(0.0..=exp.as_secs_f64()));
        match retry_after {
            Some(r) => r.min(self.config.backoff_max).max(jittered),
            None => jittered,
        }
    }

    /// POST `body` as JSON. `may_send` is asked before every attempt (the budget); when it says
    /// no, the call stops with the last answer or an error saying why.
    pub fn post(
        &self,
        url: &str,
        body: &str,
        may_send: &dyn Fn() -> Result<(), BudgetReached>,
    ) -> Attempts {
        let mut sent = 0;
        let mut last_err = String::new();
        for attempt in 0..=self.config.max_retries {
            if let Err(reached) = may_send() {
                return Attempts {
                    sent,
                    result: Err(SendError::Budget {
                        reached,
                        after: (!last_err.is_empty()).then_some(last_err),
                    }),
                };
            }
            self.wait_for_slot();
            let mut req = self
                .http
                .post(url)
                .header("content-type", "application/json")
                .body(body.to_string());
            if let Some(key) = &self.api_key {
                req = req.bearer_auth(key);
            }
            let started = Instant::now();
            sent += 1;
            let retry_after;
            match req.send() {
                Ok(resp) => {
                    let status = resp.status().as_u16();
                    let headers: Vec<(String, String)> = resp
                        .headers()
                        .iter()
                        .filter(|(k, _)| KEPT_HEADERS.contains(&k.as_str()))
                        .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
                        .collect();
                    retry_after = headers
                        .iter()
                        .find(|(k, _)| k == "retry-after")
                        .and_then(|(_, v)| v.trim().parse::<f64>().ok())
                        .map(Duration::from_secs_f64);
                    let text = match resp.text() {
                        Ok(t) => t,
                        Err(e) => {
                            self.count_failure(|f| f.connection += 1);
                            last_err = format!("reading the body from {url} failed: {e}");
                            std::thread::sleep(self.backoff(attempt, None));
                            continue;
                        }
                    };
                    let raw = RawResponse {
                        status,
                        headers: headers
                            .into_iter()
                            .map(|(k, v)| (k, self.scrub(&v)))
                            .collect(),
                        body: self.scrub(&text),
                        elapsed_ms: started.elapsed().as_millis() as u64,
                    };
                    let retryable = matches!(status, 429 | 500 | 502 | 503 | 504);
                    match status {
                        429 => self.count_failure(|f| f.rate_limited += 1),
                        500..=599 => self.count_failure(|f| f.server_errors += 1),
                        400..=499 => self.count_failure(|f| f.refused += 1),
                        _ => {}
                    }
                    if !retryable || attempt == self.config.max_retries {
                        return Attempts {
                            sent,
                            result: Ok(raw),
                        };
                    }
                    last_err = format!("HTTP {status} from {url}");
                }
                Err(e) => {
                    retry_after = None;
                    self.count_failure(|f| {
                        if e.is_timeout() {
                            f.timeouts += 1
                        } else {
                            f.connection += 1
                        }
                    });
                    last_err = if e.is_timeout() {
                        format!("{url} did not answer within {:?}", self.config.timeout)
                    } else if e.is_connect() {
                        format!("cannot connect to {url} (connection refused or unreachable)")
                    } else {
                        format!("request to {url} failed: {e}")
                    };
                }
            }
            if attempt < self.config.max_retries {
                std::thread::sleep(self.backoff(attempt, retry_after));
            }
        }
        Attempts {
            sent,
            result: Err(SendError::GaveUp {
                sent,
                last: last_err,
            }),
        }
    }
}
