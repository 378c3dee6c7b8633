//! `hspi serve`: an OpenAI-compatible server (chat + completions, with logprobs) over a local
//! language model at a chosen platform, on whichever backend runs that platform, so anyone can
//! stand up a known platform on loopback: the embedded tiny LM, or SmolLM2 (its GGUF vocabulary
//! and chat template, as llama-server reads them). Each generated token is computed from the whole
//! context afresh, and requests are answered one at a time, so concurrent load cannot change the
//! bits.

use hspi_datasets::top_label;
use std::io::Read;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use hspi_datasets::Platform;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde_json::{json, Value};

use crate::backend::{Batch, Runner};
use crate::error::{CollectError, Result};
use crate::zoo::chat_template::Message;
use crate::zoo::codec::Codec;
use crate::zoo::Model;

const MAX_BODY: usize = 1 << 20;

struct Served {
    model_id: String,
    codec: Codec,
    runner: Box<dyn Runner>,
    platform: Platform,
    requests: AtomicU64,
}

pub struct ServerHandle {
    pub addr: SocketAddr,
    server: Arc<tiny_http::Server>,
    thread: Option<JoinHandle<()>>,
}

impl ServerHandle {
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Block until the server stops (for `hspi serve` in the foreground).
    pub fn join(mut self) {
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serve `model` at `platform` on `addr` (port 0 picks a free port).
pub fn start(model: Model, platform: &Platform, addr: &str) -> Result<ServerHandle> {
    let codec = Codec::for_model(&model, platform)?;
    let runner = crate::backend::open(&model, platform)?;
    let server = tiny_http::Server::http(addr).map_err(|e| CollectError::Http {
        url: addr.into(),
        reason: format!("cannot listen: {e}"),
    })?;
    let addr = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| CollectError::Http {
            url: addr.to_string(),
            reason: "not an IP address".into(),
        })?;
    let server = Arc::new(server);
    let mut served = Served {
        model_id: model.info().id,
        codec,
        runner,
        platform: platform.clone(),
        requests: AtomicU64::new(0),
    };
    let srv = server.clone();
    let thread = std::thread::spawn(move || {
        for mut request in srv.incoming_requests() {
            let (status, body) = served.handle(&mut request);
            let header =
                tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
                    .expect("static header");
            let response = tiny_http::Response::from_string(body.to_string())
                .with_status_code(status)
                .with_header(header);
            let _ = request.respond(response);
        }
    });
    Ok(ServerHandle {
        addr,
        server,
        thread: Some(thread),
    })
}

fn error(status: u16, message: &str) -> (u16, Value) {
    (
        status,
        json!({"error": {"message": message, "type": "invalid_request_error", "code": status}}),
    )
}

impl Served {
    fn handle(&mut self, request: &mut tiny_http::Request) -> (u16, Value) {
        let path = request
            .url()
            .split('?')
            .next()
            .unwrap_or("")
            .trim_end_matches('/')
            .to_string();
        match (request.method(), path.as_str()) {
            (tiny_http::Method::Get, "/health") => (200, json!({"status": "ok"})),
            (tiny_http::Method::Get, "/v1/models") => (
                200,
                json!({"object": "list", "data": [{"id": self.model_id, "object": "model", "owned_by": "hspi", "platform": self.platform.to_string()}]}),
            ),
            (tiny_http::Method::Post, "/v1/chat/completions") => self.complete(request, true),
            (tiny_http::Method::Post, "/v1/completions") => self.complete(request, false),
            _ => error(404, &format!("no route for {} {path}", request.method())),
        }
    }

    fn complete(&mut self, request: &mut tiny_http::Request, chat: bool) -> (u16, Value) {
        let mut body = String::new();
        if request
            .as_reader()
            .take(MAX_BODY as u64 + 1)
            .read_to_string(&mut body)
            .is_err()
            || body.len() > MAX_BODY
        {
            return error(400, "the body is not UTF-8 text of at most 1 MiB");
        }
        let v: Value = match serde_json::from_str(&body) {
            Ok(v) => v,
            Err(e) => return error(400, &format!("malformed JSON: {e}")),
        };
        let ids = if chat {
            let messages: Option<Vec<Message>> = v["messages"].as_array().and_then(|m| {
                m.iter()
                    .map(|m| {
                        Some(Message {
                            role: m["role"].as_str()?.to_string(),
                            content: m["content"].as_str()?.to_string(),
                        })
                    })
                    .collect()
            });
            match messages {
                Some(m) => self.codec.chat_ids(&m),
                None => Err(CollectError::BadRequest(
                    "messages must be a list of {role, content} with text content".into(),
                )),
            }
        } else {
            self.codec.text_ids(v["prompt"].as_str().unwrap_or(""))
        };
        let ids = match ids {
            Ok(ids) => ids,
            Err(e) => return error(400, &e.to_string()),
        };
        let max_tokens = v["max_tokens"].as_u64().unwrap_or(16).min(512) as usize;
        let temperature = v["temperature"].as_f64().unwrap_or(0.0);
        let top_k = if chat {
            if v["logprobs"].as_bool().unwrap_or(false) {
                v["top_logprobs"].as_u64().unwrap_or(0).min(20) as usize
            } else {
                0
            }
        } else {
            v["logprobs"].as_u64().unwrap_or(0).min(20) as usize
        };
        let want_logprobs = top_k > 0 || v["logprobs"].as_bool().unwrap_or(false);
        let mut rng = ChaCha20Rng::seed_from_u64(v["seed"].as_u64().unwrap_or(0));
        let mut context = ids.clone();
        let mut steps = Vec::new();
        let mut text = Vec::new();
        let mut finish_reason = "length";
        for _ in 0..max_tokens {
            let logits = match self.runner.forward(Batch::Tokens(&[&context])) {
                Ok(mut l) => l.remove(0),
                Err(e) => return error(500, &e.to_string()),
            };
            let lp = log_softmax(&logits);
            let next = if temperature <= 0.0 {
                top_label(&lp).unwrap_or(0)
            } else {
                sample(&logits, temperature as f32, &mut rng)
            };
            let entry = |i: usize| {
                let bytes = self.codec.token_bytes(i as u32);
                // f32 widened to f64 prints the f32's exact value (as llama.cpp does).
                json!({"id": i, "token": String::from_utf8_lossy(&bytes), "bytes": bytes, "logprob": lp[i] as f64})
            };
            let mut step = entry(next);
            let order = crate::top_list::top_indices(&self.codec, &lp, top_k);
            step["top_logprobs"] = Value::Array(order.into_iter().map(entry).collect());
            steps.push(step);
            text.extend(self.codec.token_bytes(next as u32));
            context.push(next as u32);
            if self.codec.ends_generation(next as u32) {
                finish_reason = "stop";
                break;
            }
        }
        let text = String::from_utf8_lossy(&text).into_owned();
        let generated = steps.len();
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let logprobs = if want_logprobs {
            json!({"content": steps})
        } else {
            Value::Null
        };
        let choice = if chat {
            json!({"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": logprobs, "finish_reason": finish_reason})
        } else {
            json!({"index": 0, "text": text, "logprobs": logprobs, "finish_reason": finish_reason})
        };
        (
            200,
            json!({
                "id": format!("hspi-{n}"),
                "object": if chat { "chat.completion" } else { "text_completion" },
                "model": self.model_id,
                "system_fingerprint": format!("hspi-{}", env!("CARGO_PKG_VERSION")),
                "choices": [choice],
                "usage": {"prompt_tokens": ids.len(), "completion_tokens": generated, "total_tokens": ids.len() + generated},
            }),
        )
    }
}

/// log softmax in f32, as inference engines compute it.
pub fn log_softmax(logits: &[f32]) -> Vec<f32> {
    let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|x| (x - m).exp()).sum();
    let ls = sum.ln();
    logits.iter().map(|x| x - m - ls).collect()
}

fn sample(logits: &[f32], temperature: f32, rng: &mut ChaCha20Rng) -> usize {
    let scaled: Vec<f32> = logits.iter().map(|x| x / temperature).collect();
    let p: Vec<f32> = log_softmax(&scaled).iter().map(|x| x.exp()).collect();
    let mut r: f32 = rng.random_range(0.0..1.0);
    for (i, pi) in p.iter().enumerate() {
        r -= pi;
        if r <= 0.0 {
            return i;
        }
    }
    p.len() - 1
}
