//! `hspi audit --pack`: the one-command audit. A fresh random subset of the pack's pool is
//! asked, the claim decided against the pack's references and classifier (no engine runs
//! here), the API contract checked beside it, and the report written next to the answers.

use std::path::Path;

use hspi_classify::dimension_verdict::DimensionStatus;
use hspi_classify::verify::{Verdict, VerifyParams};
use hspi_classify::{PlatformModel, ReferenceIndex};
use hspi_collect::session::{EndpointOptions, EndpointSession, ForcedSession};
use hspi_collect::teacher_forced::{ForcedEngines, ReferenceEngine};
use hspi_datasets::{Dimension, ModelInfo, NumericFormat, OpenMode, Platform, PlatformPattern};
use hspi_pack::{draw, fresh_seed, Pack, PackError, PromptTokens};
use hspi_reports::contract::PackDraw;
use hspi_reports::report::Report;

use crate::contract::{billing, determinism, determinism_probes, parameters, transport, Repeat};
use crate::endpoint::{audit_report, verify_endpoint_forced, write_audit};
use crate::error::AuditError;
use crate::setup::{format_claim, VerifySetup};
use crate::Lines;

/// Prompts drawn per audit when not told: three times what a format verdict usually takes
/// (8 answers of 8 tokens), so text-only and rounded endpoints have room too.
pub const DEFAULT_DRAW: usize = 24;

/// Prompts made for this audit alone, their references computed here on the provider's tokens.
pub struct FreshPrompts<'a> {
    /// The model's weights (a GGUF file or a checkpoint directory), checked against the pack's
    /// model identity.
    pub weights: &'a Path,
    /// The formats to compute (empty: every format of the pack hspi computes; `local` false:
    /// none, the reference engines only).
    pub formats: Vec<NumericFormat>,
    pub local: bool,
    /// llama-servers computing references too, each `URL=PLATFORM`.
    pub servers: Vec<String>,
    /// Completions endpoints scoring the provider's tokens with prompt logprobs, each
    /// `URL=PLATFORM`, and the environment variable holding their key.
    pub endpoints: Vec<String>,
    pub endpoint_key_env: Option<String>,
    /// cuBLAS precisions hspi's GPU pass computes references at on this machine's GPU.
    pub gpus: Vec<NumericFormat>,
    /// Whether the formats' engines are held between answers or made per answer.
    pub residency: hspi_collect::residency::Residency,
    /// Words of context each prompt asks the model to recall (0: short word prompts); a long
    /// context makes attention read far back, where a quantised KV cache shows most.
    pub context: usize,
}

pub struct PackAudit<'a> {
    /// The pack; None: the installed pack for the endpoint's model.
    pub pack: Option<&'a Path>,
    pub claim: &'a str,
    /// Prompts to draw from the pool.
    pub draw: usize,
    /// None: a fresh unpredictable seed (reported, so the draw can be reproduced).
    pub seed: Option<u64>,
    pub params: VerifyParams,
    /// The endpoint; `model` is the name it is asked for (empty: the pack's model).
    pub endpoint: EndpointOptions,
    /// Where the answers and the report go (None: `./hspi-audit-UNIXTIME`).
    pub out: Option<&'a Path>,
    pub mode: OpenMode,
    pub command: &'a str,
    /// Fresh prompts instead of the pool's (`--weights`).
    pub fresh: Option<FreshPrompts<'a>>,
    /// The provider claims its answers repeat bit for bit (batch-invariant serving): ask some
    /// prompts again and report the jitter on a line of its own.
    pub deterministic: bool,
}

/// The pack at `dir`, else the installed pack for `model`; checked.
pub(crate) fn open_pack(dir: Option<&Path>, model: &str) -> Result<Pack, AuditError> {
    Ok(match (dir, model) {
        (Some(dir), _) => Pack::open(dir)?,
        (None, "") => return Err(AuditError::NoReferences),
        (None, m) => hspi_pack::find_installed(&hspi_collect::zoo::cache_dir(), m)?,
    })
}

/// Where an audit keeps its answers when not told: `hspi-audit-UNIXTIME` here.
fn default_out() -> std::path::PathBuf {
    format!("hspi-audit-{}", hspi_datasets::manifest::unix_now()).into()
}

/// Refuse a pack made for another model than the one the endpoint is asked for.
pub fn check_model(pack: &Pack, asked: &str) -> Result<(), PackError> {
    if pack.manifest.model.matches(asked) {
        return Ok(());
    }
    Err(PackError::OtherModel {
        pack: pack.dir.clone(),
        pack_model: pack.manifest.model.id.clone(),
        asked: asked.to_string(),
    })
}

/// Whether every platform of the pack the claim covers repeats itself bit for bit (measured).
fn claimed_repeat_bitwise(pack: &Pack, claim: &PlatformPattern) -> bool {
    let claimed: Vec<_> = pack
        .manifest
        .platforms
        .iter()
        .filter(|p| {
            p.platform
                .parse::<Platform>()
                .is_ok_and(|pl| claim.matches(&pl))
        })
        .collect();
    !claimed.is_empty() && claimed.iter().all(|p| p.deterministic == Some(true))
}

/// The formats a fresh audit computes: those asked for, else every format of the pack's
/// platforms and other engines' paths of them (`hspi_collect::scheme::engine_paths`; hspi
/// refuses, by name, any it cannot compute); and a claimed KV cache (`f16+kv-q8_0`), which no
/// pack holds, beside them and its weights' format.
fn fresh_formats(
    pack: &Pack,
    asked: &[NumericFormat],
    claim: &PlatformPattern,
) -> Vec<NumericFormat> {
    let mut formats = pack_or_asked_formats(pack, asked);
    if asked.is_empty() {
        for path in formats
            .clone()
            .into_iter()
            .flat_map(hspi_collect::scheme::engine_paths)
        {
            if !formats.contains(&path) {
                formats.push(path);
            }
        }
    }
    let cached = claim
        .get(Dimension::Format)
        .and_then(|f| f.parse::<NumericFormat>().ok())
        .filter(|f| f.kv_cache().is_some());
    if let Some(f) = cached {
        for needed in [f.weights(), f] {
            if !formats.contains(&needed) {
                formats.push(needed);
            }
        }
    }
    formats
}

/// The formats asked for, else every format of the pack's platforms.
fn pack_or_asked_formats(pack: &Pack, asked: &[NumericFormat]) -> Vec<NumericFormat> {
    if !asked.is_empty() {
        return asked.to_vec();
    }
    let mut formats: Vec<NumericFormat> = pack
        .manifest
        .platforms
        .iter()
        .filter_map(|p| p.platform.parse::<Platform>().ok())
        .map(|p| p.format)
        .collect();
    formats.sort();
    formats.dedup();
    formats
}

/// The identity of `weights`, checked to be the pack's model (their sha256 against the pack's).
fn check_weights(pack: &Pack, weights: &Path) -> Result<ModelInfo, AuditError> {
    let sha = hspi_collect::zoo::weights_sha256(weights)?;
    let model = &pack.manifest.model;
    if model.weights_sha256.as_deref() == Some(sha.as_str()) {
        return Ok(ModelInfo {
            architecture: model.architecture.clone(),
            tokenizer_sha256: model.tokenizer_sha256.clone(),
            ..ModelInfo::new(model.id.clone(), sha, hspi_datasets::CAUSAL_LM)
        });
    }
    Err(AuditError::WeightsNotThePacks {
        weights: weights.display().to_string(),
        sha: hspi_datasets::short_id(&sha).to_string(),
        pack: pack.manifest.name.clone(),
        model: model.id.clone(),
        expected: model
            .weights_sha256
            .as_deref()
            .map_or("the pack names none", hspi_datasets::short_id)
            .to_string(),
    })
}

pub fn audit_with_pack(a: PackAudit, lines: &Lines) -> Result<Report, AuditError> {
    let pack = &open_pack(a.pack, &a.endpoint.model)?;
    let mut endpoint = a.endpoint;
    if endpoint.model.is_empty() {
        endpoint.model = pack.manifest.model.id.clone();
    }
    check_model(pack, &endpoint.model)?;
    let pool = hspi_probe::read_probe_set(&pack.pool_path())?;
    let seed = a.seed.unwrap_or_else(fresh_seed);
    let out = a.out.map_or_else(default_out, Path::to_path_buf);
    let probes = match &a.fresh {
        None => {
            let drawn = draw(&pool, a.draw.min(pool.probes.len()), seed)?;
            (lines.status)(&format!(
                "pack {}@{}: {} of its {} prompts drawn at random (seed {seed}); references for {} platforms",
                pack.manifest.name,
                pack.short_id(),
                drawn.probes.probes.len(),
                drawn.pool,
                pack.manifest.platforms.len()
            ));
            drawn.probes
        }
        Some(fresh) => {
            let (top, max) = (
                pack.manifest.pool.top_logprobs,
                pack.manifest.pool.max_tokens,
            );
            match fresh.context {
                0 => hspi_probe::fresh_prompts(seed, a.draw, max, top),
                words => hspi_probe::recall_prompts(seed, a.draw, words, max, top),
            }
        }
    };
    // An audit goes on when logprobs do not come back: it says so and weighs the text.
    endpoint.text_only = true;
    let model = endpoint.model.clone();
    // The answers' directory first: a refusal to overwrite it costs no model loading.
    let mut session = EndpointSession::open(&endpoint, probes.clone(), &out, a.mode, a.command)?;
    let (mut setup, mut forced) = match &a.fresh {
        None => {
            let setup = VerifySetup::load(
                a.claim,
                &pack.classifier_path(),
                &pack.reference_dirs()?,
                a.params,
            )?;
            (setup, None)
        }
        Some(fresh) => {
            let claim = format_claim(a.claim)?;
            let info = check_weights(pack, fresh.weights)?;
            let formats = match fresh.local {
                true => fresh_formats(pack, &fresh.formats, &claim),
                false => Vec::new(),
            };
            let key_env = fresh.endpoint_key_env.as_deref();
            let servers = ReferenceEngine::named(
                &fresh.servers,
                &fresh.endpoints,
                key_env,
                &fresh.gpus,
                fresh.weights,
            )?;
            let computed: Vec<String> = formats
                .iter()
                .map(ToString::to_string)
                .chain(
                    servers
                        .iter()
                        .map(|s| format!("{} (your engine)", s.platform())),
                )
                .collect();
            (lines.status)(&format!(
                "{} prompts made for this audit (seed {seed}) from {} possible; their references are computed on the provider's tokens at {}",
                probes.probes.len(),
                hspi_probe::fresh_space(),
                computed.join(" ")
            ));
            let engines = ForcedEngines {
                weights: fresh.weights.to_path_buf(),
                formats,
                servers,
                residency: fresh.residency,
            };
            let forced = ForcedSession::open(
                engines,
                info.clone(),
                &probes,
                &out.join(FRESH_REFERENCES),
                a.mode,
                a.command,
            )?;
            let model = PlatformModel::references_only(
                info,
                &forced.platforms(),
                pack.manifest.pool.top_logprobs as usize,
            );
            let setup = VerifySetup {
                model,
                references: ReferenceIndex::default(),
                reference_dirs: vec![out.join(FRESH_REFERENCES)],
                claim,
                params: a.params,
            };
            (setup, Some(forced))
        }
    };
    let pool_size = pool.probes.len();
    let mut v = verify_endpoint_forced(&setup, &mut session, forced.as_mut(), &model, lines)?;
    for r in &v.references {
        setup.references.add(r);
    }

    // An endpoint that went down is not asked again (its retries would cost seconds each).
    let down = v.report.endpoint_down.clone();
    let repeat = v
        .records
        .first()
        .filter(|_| down.is_none())
        .map(|first| Repeat {
            first: first.clone(),
            again: session.ask_again(&first.probe_id),
            bitwise: claimed_repeat_bitwise(pack, &setup.claim),
        });
    let repeats: Vec<Repeat> = match a.deterministic && down.is_none() {
        true => determinism_probes(&v.records)
            .into_iter()
            .map(|first| Repeat {
                first: first.clone(),
                again: session.ask_again(&first.probe_id),
                bitwise: true,
            })
            .collect(),
        false => Vec::new(),
    };
    v.spent.requests = session.budget.spent().requests;
    if let Some(r) = &repeat {
        sampled_texts_name_no_model(&mut v, r);
    }
    let prompt_tokens = match &mut forced {
        Some(f) => Some(PromptTokens {
            counted_by: "hspi's tokenizer of the model (its chat template on chat completions)"
                .into(),
            counts: f.prompt_tokens(session.asks_chat())?,
        }),
        None => pack.prompt_tokens()?,
    };
    let mut contract = vec![
        billing(&v.records, prompt_tokens.as_ref()),
        parameters(&v.records, &probes, repeat.as_ref()),
        transport(
            &session.failures(),
            v.spent.requests,
            &v.unanswered,
            v.records.len(),
            down.as_deref(),
        ),
    ];
    if a.deterministic {
        contract.push(determinism(repeat.iter().chain(&repeats)));
    }
    for c in &contract {
        (lines.status)(&format!("{}: {} — {}", c.name, c.status.name(), c.detail));
    }
    if let Some(f) = forced {
        report_cost(&f, lines);
        f.finish()?;
    }
    let out = session.out.clone();
    session.finish()?;
    let draw = PackDraw {
        pack: format!("{}@{}", pack.manifest.name, pack.short_id()),
        pool: pool_size,
        drawn: probes.probes.len(),
        seed,
        probes: probes.probes.iter().map(|p| p.id.clone()).collect(),
        fresh_space: a.fresh.as_ref().map(|_| hspi_probe::fresh_space()),
    };
    v.subject.architecture = pack.manifest.model.architecture.clone().or_else(|| {
        let weights = a.fresh.as_ref()?.weights;
        Some(
            hspi_collect::zoo::model_config::ModelConfig::of_weights(weights)
                .ok()?
                .arch,
        )
    });
    let report = audit_report(&setup, v, &out).with_contract(contract, Some(draw));
    write_audit(&report, &out, lines)?;
    Ok(report)
}

/// A text-only endpoint that ignored temperature 0 (the same prompt asked twice, two texts)
/// samples its texts: how unlikely the claimed model finds a sampled text says nothing about
/// which model wrote it, so "another model" from text alone stands down to inconclusive.
fn sampled_texts_name_no_model(v: &mut crate::Verified, repeat: &Repeat) {
    let text = |r: &hspi_datasets::Record| match &r.outputs {
        hspi_datasets::Outputs::Completion { text, .. } => Some(text.clone()),
        _ => None,
    };
    let sampled = repeat
        .again
        .as_ref()
        .is_ok_and(|again| text(again) != text(&repeat.first));
    let text_only = v.report.presentation.as_deref()
        == Some(hspi_datasets::Presentation::TextOnly.describe().as_str());
    if !(sampled && text_only) {
        return;
    }
    let why = "the endpoint shows text only and did not honour temperature 0 (one prompt asked twice gave two texts): a sampled text's likelihood cannot tell another model from sampling";
    for d in &mut v.report.dimensions {
        if d.dimension == Dimension::Model && d.status == DimensionStatus::Mismatch {
            d.status = DimensionStatus::Inconclusive;
            d.nearest = d.claimed.clone();
            d.note = Some(format!("{why}; {}", d.note.clone().unwrap_or_default()));
        }
    }
    if matches!(&v.report.verdict, Verdict::Mismatch { dimensions, .. } if dimensions == &[Dimension::Model])
    {
        v.report.verdict = Verdict::Inconclusive { reason: why.into() };
    }
}

/// Where a fresh audit keeps the references it computed, inside the answers' directory.
pub const FRESH_REFERENCES: &str = "references";

/// One status line: what the references on the provider's tokens cost.
fn report_cost(f: &ForcedSession, lines: &Lines) {
    let seconds: f64 = f
        .costs
        .iter()
        .flat_map(|c| c.seconds.iter().map(|(_, s)| s))
        .sum();
    let positions: usize = f.costs.iter().map(|c| c.positions).sum();
    (lines.status)(&format!(
        "references on the provider's tokens: {} answers, {positions} positions, {:.1} s ({:.0} ms per position for {} formats)",
        f.costs.len(),
        seconds,
        1e3 * seconds / positions.max(1) as f64,
        f.platforms().len()
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Pack {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../datasets/packs/smollm2-llamacpp");
        Pack::open(&dir).unwrap()
    }

    /// A fresh audit of a pack holding vLLM's INT8 W8A8 computes PyTorch's path of it and vLLM's
    /// AVX2 library's too, and PyTorch's path of FP8 weights; the formats asked for are computed
    /// as asked.
    #[test]
    fn a_fresh_audit_computes_other_engines_paths_of_the_packs_formats() {
        let pack = shipped();
        let any: PlatformPattern = "*/*/*/*".parse().unwrap();
        let formats = fresh_formats(&pack, &[], &any);
        assert!(formats.contains(&NumericFormat::Int8W8a8));
        assert!(formats.contains(&NumericFormat::Int8W8a8Qdq), "{formats:?}");
        assert!(
            formats.contains(&NumericFormat::Int8W8a8Trunc),
            "{formats:?}"
        );
        let asked = [NumericFormat::Int8W8a8];
        assert_eq!(fresh_formats(&pack, &asked, &any), asked.to_vec());
    }
}
