//! Which tokens a top list of hspi's engines holds, and in what order: one helper for its server
//! and its teacher-forced references, so both write the lists a record holds alike.

use hspi_datasets::record::top_rank;

use crate::zoo::codec::Codec;

/// The `k` best tokens of a vocabulary with logprobs `lp`: hspi's engine picks, of tokens tied
/// at the last place, those of the lowest ids (its choice, as every engine makes its own), and
/// lists them in the one order of a top list, as a record holds any endpoint's.
pub(crate) fn top_indices(codec: &Codec, lp: &[f32], k: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..lp.len()).collect();
    let k = k.min(lp.len());
    if k == 0 {
        return Vec::new();
    }
    order.select_nth_unstable_by(k - 1, |a, b| lp[*b].total_cmp(&lp[*a]).then(a.cmp(b)));
    order.truncate(k);
    order.sort_by(|a, b| top_rank_of(codec, lp, *a, *b));
    order
}

/// Tokens `a` and `b` of a vocabulary with logprobs `lp` in the one order of a top list
/// (`hspi_datasets::record::top_rank`); a token's text is looked up only where values tie.
fn top_rank_of(codec: &Codec, lp: &[f32], a: usize, b: usize) -> std::cmp::Ordering {
    let text = |i: usize| String::from_utf8_lossy(&codec.token_bytes(i as u32)).into_owned();
    lp[b].total_cmp(&lp[a]).then_with(|| {
        top_rank(
            (lp[a], &text(a), Some(a as u32)),
            (lp[b], &text(b), Some(b as u32)),
        )
    })
}
