//! A teacher-forced position as a record holds it: from a reference engine's logits at each
//! position of an answer, the provider's token with its logprob and the engine's best `top`
//! (in the one order of a top list), logprobs printed exactly. One rule for hspi's CPU formats
//! and its GPU pass.

use hspi_datasets::{Logprob, TokenStep, TopEntry};

use crate::error::Result;
use crate::serve::log_softmax;
use crate::top_list::top_indices;
use crate::zoo::codec::Codec;

/// The steps at each generated position of `context` (`prompt_len..`), from an engine's logits
/// after each prefix: `logits(tokens, from)` over the context but its last token, from the
/// prompt's end (one row per generated token).
pub(crate) fn forced_steps(
    codec: &Codec,
    context: &[u32],
    prompt_len: usize,
    top: usize,
    logits: impl FnOnce(&[u32], usize) -> Result<Vec<Vec<f32>>>,
) -> Result<Vec<TokenStep>> {
    let rows = logits(&context[..context.len() - 1], prompt_len)?;
    Ok(rows
        .iter()
        .zip(&context[prompt_len..])
        .map(|(row, id)| step(codec, &log_softmax(row), *id, top))
        .collect())
}

/// One position: the given token with its logprob, and the `top` best.
fn step(codec: &Codec, lp: &[f32], id: u32, top: usize) -> TokenStep {
    let entry = |i: usize| TopEntry {
        token: String::from_utf8_lossy(&codec.token_bytes(i as u32)).into_owned(),
        id: Some(i as u32),
        logprob: logprob(lp[i]),
    };
    let order = top_indices(codec, lp, top);
    let at = (id as usize).min(lp.len() - 1);
    TokenStep {
        token: String::from_utf8_lossy(&codec.token_bytes(id)).into_owned(),
        id: Some(id),
        bytes: Some(codec.token_bytes(id)),
        logprob: Some(logprob(lp[at])),
        top: order.into_iter().map(entry).collect(),
    }
}

/// An f32 printed exactly (17 significant digits), as llama.cpp prints logprobs.
fn logprob(v: f32) -> Logprob {
    Logprob::parse(&format!("{:.17e}", f64::from(v))).expect("a finite f32 prints as a number")
}
