//! hspi's all-positions pass against llama-server on the same GGUF file: llama-server's greedy
//! answer to a prompt, teacher-forced through hspi at the same format.

use std::path::Path;

use hspi_collect::backend::candle_cpu::GgufAllPositions;
use hspi_collect::serve::log_softmax;
use hspi_datasets::NumericFormat;

use super::llama::LlamaServer;

/// How hspi's references stand to llama-server's greedy answer.
#[derive(Debug)]
pub struct Gap {
    /// Positions where hspi ranks llama-server's token first.
    pub agree: usize,
    pub positions: usize,
    /// Mean and largest |Δ logprob| of llama-server's tokens, where it gave one.
    pub mean: f32,
    pub max: f32,
    /// The mean probability llama-server gave its greedy tokens (peaked, or noise).
    pub greedy_p: f32,
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "greedy {}/{}, mean |Δ logprob| {:.1e}, max {:.1e}, served greedy p {:.2}",
            self.agree, self.positions, self.mean, self.max, self.greedy_p
        )
    }
}

/// llama-server's greedy answer of `n` tokens to `prompt` (token ids): each token with its
/// logprob, where the server gives one (it leaves out a token that ends inside a UTF-8
/// character).
pub fn served_answer(server: &LlamaServer, prompt: &[u32], n: usize) -> Vec<(u32, Option<f32>)> {
    let url = format!("{}/completion", server.url);
    let body = serde_json::json!({
        "prompt": prompt,
        "n_predict": n,
        "temperature": 0.0,
        "n_probs": 1,
        "cache_prompt": false,
        "ignore_eos": true,
        "return_tokens": true,
    });
    let response = super::post_json(&url, &body);
    let tokens: Vec<u32> = response["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("{url}: no tokens in {response}"))
        .iter()
        .map(|t| t.as_u64().unwrap() as u32)
        .collect();
    let mut probs = response["completion_probabilities"]
        .as_array()
        .unwrap_or_else(|| panic!("{url}: no completion_probabilities in {response}"))
        .iter()
        .map(|p| {
            (
                p["id"].as_u64().unwrap() as u32,
                p["logprob"].as_f64().unwrap() as f32,
            )
        })
        .peekable();
    tokens
        .into_iter()
        .map(|id| (id, probs.next_if(|(p, _)| *p == id).map(|(_, lp)| lp)))
        .collect()
}

/// vLLM's greedy answer of `n` tokens to `prompt` (token ids) from its completions endpoint at
/// `base`, served as `model`: each token with its logprob.
pub fn vllm_answer(base: &str, model: &str, prompt: &[u32], n: usize) -> Vec<(u32, Option<f32>)> {
    let url = format!("{base}/v1/completions");
    let body = serde_json::json!({
        "model": model,
        "prompt": prompt,
        "max_tokens": n,
        "temperature": 0.0,
        "logprobs": 1,
        "ignore_eos": true,
        "return_tokens_as_token_ids": true,
    });
    let response = super::post_json(&url, &body);
    let logprobs = &response["choices"][0]["logprobs"];
    let tokens = logprobs["tokens"]
        .as_array()
        .unwrap_or_else(|| panic!("{url}: no logprobs.tokens in {response}"));
    tokens
        .iter()
        .zip(logprobs["token_logprobs"].as_array().unwrap())
        .map(|(t, lp)| {
            let id = t.as_str().unwrap().trim_start_matches("token_id:");
            (id.parse().unwrap(), lp.as_f64().map(|lp| lp as f32))
        })
        .collect()
}

/// `server`'s greedy answer of `n` tokens to `prompt`, against hspi's references at `format` of
/// the GGUF file at `weights` on its tokens.
pub fn gap(
    server: &LlamaServer,
    weights: &Path,
    format: NumericFormat,
    prompt: &[u32],
    n: usize,
) -> Gap {
    let served = served_answer(server, prompt, n);
    assert_eq!(served.len(), n, "{}: llama-server's answer", server.url);
    let mut lm = GgufAllPositions::load(weights, format, None).unwrap();
    gap_of(&served, prompt, |context, from| {
        lm.logits_from(context, from).unwrap()
    })
}

/// vLLM's greedy answer (at `base`, served as `model`) of `n` tokens to `prompt`, against hspi's
/// references at `format` of the weights at `weights` on its tokens: the served path at the
/// market's formats, llama.cpp's pass of the GGUF file otherwise (vLLM's fp32 against F32).
pub fn vllm_gap(
    base: &str,
    model: &str,
    weights: &Path,
    format: NumericFormat,
    prompt: &[u32],
    n: usize,
) -> Gap {
    let served = vllm_answer(base, model, prompt, n);
    assert_eq!(served.len(), n, "{base}: vLLM's answer");
    if hspi_collect::scheme::serving(format).is_none() {
        let mut lm = GgufAllPositions::load(weights, format, None).unwrap();
        return gap_of(&served, prompt, |context, from| {
            lm.logits_from(context, from).unwrap()
        });
    }
    let decoder = hspi_collect::zoo::decoder_weights::load(weights).unwrap();
    let lm = hspi_collect::backend::candle_cpu::ServedLm::new(&decoder, format).unwrap();
    gap_of(&served, prompt, |context, from| {
        lm.logits_from(context, from).unwrap()
    })
}

/// How `served` (an answer to `prompt`) stands to the logits `logits(context, from)` computes
/// after each of its prefixes.
fn gap_of(
    served: &[(u32, Option<f32>)],
    prompt: &[u32],
    mut logits: impl FnMut(&[u32], usize) -> Vec<Vec<f32>>,
) -> Gap {
    let n = served.len();
    let mut context = prompt.to_vec();
    context.extend(served.iter().map(|(id, _)| id));
    let rows = logits(&context, prompt.len());
    let (mut deltas, mut agree) = (Vec::new(), 0);
    for ((id, logprob), row) in served.iter().zip(&rows) {
        let lp = log_softmax(row);
        agree += usize::from(hspi_datasets::top_label(&lp) == Some(*id as usize));
        deltas.extend(logprob.map(|theirs| (lp[*id as usize] - theirs).abs()));
    }
    let given = deltas.len().max(1) as f32;
    Gap {
        agree,
        positions: n,
        mean: deltas.iter().sum::<f32>() / given,
        max: deltas.iter().cloned().fold(0.0, f32::max),
        greedy_p: served
            .iter()
            .filter_map(|(_, lp)| lp.map(f32::exp))
            .sum::<f32>()
            / given,
    }
}
