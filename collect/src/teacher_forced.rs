//! References on the provider's own tokens (teacher forcing). For an answer an endpoint gave, each
//! format hspi can compute scores the very prefix the provider saw: the prompt, then the tokens
//! the provider returned so far. Every generated position is then evidence, whichever path the
//! provider's text took (sampled, or greedy on another engine), and the prompt can be one made
//! for this audit alone: no provider can have prepared for it.

use std::path::Path;
use std::time::Instant;

use hspi_datasets::{AskedAs, NumericFormat, Outputs, Platform, ProbeInput, Record, TokenStep};

use crate::backend::candle_cpu::{GgufAllPositions, ServedLm, ServedTables};
use crate::error::{CollectError, Result};
pub use crate::forced_server::ServerReference;
pub use crate::reference_engine::ReferenceEngine;
pub use crate::residency::Residency;
use crate::token_steps::forced_steps;
use crate::zoo::chat_template::Message;
use crate::zoo::codec::Codec;
use crate::zoo::decoder_weights::DecoderWeights;
use crate::zoo::model_config::ModelConfig;

/// One format's engine, able to score every position of a given token sequence.
enum ForcedLm {
    /// llama.cpp's formats on candle's quantized kernels.
    Gguf(GgufAllPositions),
    /// The market's formats as vLLM computes them (one causal pass).
    Served(Box<ServedLm>),
    /// An engine the user runs: a llama-server (bit for bit where it is the provider's engine)
    /// or a completions endpoint with prompt logprobs.
    Server(ReferenceEngine),
}

impl ForcedLm {
    /// The steps at each generated position of `context` (`prompt_len..`): the provider's token
    /// with its logprob, and the engine's `top` best.
    fn steps(
        &mut self,
        codec: &Codec,
        context: &[u32],
        prompt_len: usize,
        top: usize,
    ) -> Result<Vec<TokenStep>> {
        match self {
            ForcedLm::Gguf(lm) => forced_steps(codec, context, prompt_len, top, |tokens, from| {
                lm.logits_whole(tokens, from)
            }),
            ForcedLm::Served(lm) => {
                forced_steps(codec, context, prompt_len, top, |tokens, from| {
                    lm.logits_from(tokens, from)
                })
            }
            ForcedLm::Server(server) => server.steps(context, prompt_len, top),
        }
    }
}

/// Where a format's requantised matrices are kept for the weights of digest `sha256`: named by
/// the platform, whose engine version says which quantiser made them.
fn kept_path(sha256: &str, platform: &Platform) -> std::path::PathBuf {
    crate::zoo::cache_dir()
        .join("forced")
        .join(sha256.get(..16).unwrap_or(sha256))
        .join(kept_name(platform))
}

/// A kept file's name: a GGUF file for llama.cpp's formats, the served path's own otherwise.
/// A format with a quantised KV cache keeps its weights' file: the cache is rounded at run time.
fn kept_name(platform: &Platform) -> String {
    let kind = match crate::scheme::serving(platform.format) {
        Some(_) => "served",
        None => "gguf",
    };
    let weights = Platform {
        format: platform.format.weights(),
        ..platform.clone()
    };
    format!("{}.{kind}", weights.slug())
}

/// How one format's engine is made: from the weights, through the file its first load keeps.
struct Maker {
    format: NumericFormat,
    weights: std::path::PathBuf,
    kept: Option<std::path::PathBuf>,
    /// The served path's model and its shared tables, for the market's formats.
    served: Option<(ModelConfig, std::sync::Arc<ServedTables>)>,
}

impl Maker {
    /// The engine, read from its kept file where that holds it, else computed (from `source`,
    /// the weights loaded already, where given) and kept.
    fn make(&self, source: Option<&DecoderWeights>) -> Result<ForcedLm> {
        let Some((config, tables)) = &self.served else {
            return Ok(ForcedLm::Gguf(GgufAllPositions::load(
                &self.weights,
                self.format,
                self.kept.as_deref(),
            )?));
        };
        if let Some(lm) = self
            .kept
            .as_deref()
            .and_then(|k| ServedLm::read_kept(k, config, self.format, tables.clone()))
        {
            return Ok(ForcedLm::Served(Box::new(lm)));
        }
        let loaded;
        let source = match source {
            Some(w) => w,
            None => {
                loaded = crate::zoo::decoder_weights::load(&self.weights)?;
                &loaded
            }
        };
        let lm = ServedLm::with_tables(source, self.format, tables.clone())?;
        if let Some(k) = &self.kept {
            // A cache that cannot be written costs the next load its time, nothing else.
            let _ = lm.write_kept(k);
        }
        Ok(ForcedLm::Served(Box::new(lm)))
    }
}

/// A format's engine between answers.
enum Slot {
    Held(ForcedLm),
    /// Made for each answer and dropped after it.
    PerAnswer(Maker),
}

/// How an answer's references were computed: per platform, the seconds it took.
#[derive(Debug, Clone, Default)]
pub struct ForcedCost {
    pub seconds: Vec<(Platform, f64)>,
    /// Positions scored per platform.
    pub positions: usize,
}

/// What computes an audit's references: the model's weights at `formats` (every one hspi
/// computes itself; none: the reference engines only), and the reference engines the user
/// names.
pub struct ForcedEngines {
    pub weights: std::path::PathBuf,
    pub formats: Vec<NumericFormat>,
    pub servers: Vec<ReferenceEngine>,
    pub residency: Residency,
}

/// hspi's own engines for a model's weights, one per format, scoring answers on their tokens.
pub struct ForcedReferences {
    codec: Codec,
    model_id: String,
    lms: Vec<(Platform, Slot)>,
    residency: Residency,
    /// Where formats made per answer are kept when the weights' digest is not given.
    _scratch: Option<tempfile::TempDir>,
}

impl ForcedReferences {
    /// The platforms [`Self::open`] would compute for `weights` at `formats` (none: the
    /// reference engines' only), checked without loading the weights
    /// (a format hspi does not compute, llama.cpp's formats from a checkpoint directory).
    /// Then each reference server's platform (each answered once, and named by no other).
    pub fn plan(
        model: &str,
        weights: &Path,
        formats: &[NumericFormat],
        servers: &mut [ReferenceEngine],
    ) -> Result<Vec<Platform>> {
        let (_, mut platforms) = Self::formats(model, weights, formats)?;
        if platforms.is_empty() && servers.is_empty() {
            return Err(CollectError::BadRequest(
                "no format to compute and no reference engine: nothing would compute references"
                    .into(),
            ));
        }
        for s in servers.iter_mut() {
            if platforms.contains(s.platform()) {
                return Err(CollectError::BadRequest(format!(
                    "reference engines: platform {} is named twice",
                    s.platform()
                )));
            }
            s.check()?;
            platforms.push(s.platform().clone());
        }
        Ok(platforms)
    }

    /// The weights' file and the platforms of `formats` hspi computes itself for `model` (the
    /// name the user audits it by).
    fn formats(
        model: &str,
        weights: &Path,
        formats: &[NumericFormat],
    ) -> Result<(std::path::PathBuf, Vec<Platform>)> {
        // The path only: the weights' identity (a sha256 over them) is the caller's to check once.
        let path = crate::zoo::weights_at(weights, model)?;
        let model_id = model.to_string();
        let platforms = crate::backend::candle_cpu::forced_platforms();
        let wanted: Vec<Platform> = {
            let mut out = Vec::new();
            for f in formats {
                let listed = platforms.iter().find(|p| p.format == *f).cloned();
                let cached = || crate::backend::candle_cpu::kv_cached_platform(*f);
                let p = listed.or_else(cached).ok_or_else(|| {
                    CollectError::Unsupported {
                        platform: f.to_string(),
                        model: model_id.clone(),
                        reason: format!(
                            "hspi computes this model at {}, llama.cpp's formats with a q8_0 or q4_0 KV cache (f16+kv-q8_0) and bf16 with vLLM's fp8 caches (bf16+kv-fp8-e4m3, bf16+kv-fp8-e5m2)",
                            platforms
                                .iter()
                                .map(|p| p.format.to_string())
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    }
                })?;
                out.push(p);
            }
            out
        };
        // llama.cpp's formats are requantised from a GGUF file's tensors; a checkpoint directory
        // gives the market's formats only.
        if path.is_dir() {
            if let Some(p) = wanted
                .iter()
                .find(|p| crate::scheme::serving(p.format).is_none())
            {
                return Err(CollectError::Unsupported {
                    platform: p.format.to_string(),
                    model: model_id.clone(),
                    reason: format!(
                        "{} is a checkpoint directory: hspi computes llama.cpp's formats from a GGUF file, a checkpoint at the market's formats only ({})",
                        path.display(),
                        crate::scheme::market_formats()
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(" ")
                    ),
                });
            }
        }
        Ok((path, wanted))
    }

    /// The formats of `formats` (none: the reference engines' platforms only) for the
    /// language model whose weights are at `weights` (a GGUF file or a checkpoint directory).
    /// `sha256`, the weights' digest where the caller checked it, keys the requantised formats
    /// kept under the cache directory (`$HSPI_CACHE/forced/`), so a later audit of the same
    /// weights loads them without requantising; None keeps them for this engine's life only.
    /// `residency` holds every format loaded, or makes each per answer from its kept file
    /// (`Residency::Auto`: the first where they fit half the available memory). `servers` are
    /// engines the user names as references of their own platforms, after the formats.
    pub fn open(
        model: &str,
        weights: &Path,
        formats: &[NumericFormat],
        servers: Vec<ReferenceEngine>,
        sha256: Option<&str>,
        residency: Residency,
    ) -> Result<ForcedReferences> {
        let (path, wanted) = Self::formats(model, weights, formats)?;
        let model_id = model.to_string();
        let parameters = ModelConfig::of_weights(&path)?.parameters() as f64;
        let estimate: f64 = wanted
            .iter()
            .map(|p| crate::backend::candle_cpu::held_bytes_per_weight(p.format) * parameters)
            .sum();
        let residency = residency.decide(estimate as u64, crate::residency::available_memory());
        let per_answer = residency == Residency::PerAnswer;
        let scratch = match (per_answer, sha256) {
            (true, None) => {
                Some(tempfile::tempdir().map_err(CollectError::io(&std::env::temp_dir()))?)
            }
            _ => None,
        };
        let is_served = |f: NumericFormat| crate::scheme::serving(f).is_some();
        // The market formats' source weights (f32), with their shared unquantised tables.
        let source = match wanted.iter().any(|p| is_served(p.format)) {
            true => Some(crate::zoo::decoder_weights::load(&path)?),
            false => None,
        };
        let tables = source.as_ref().map(ServedTables::new);
        let makers: Vec<Maker> = wanted
            .iter()
            .map(|p| {
                let float = crate::backend::candle_cpu::dtype(p.format).is_some();
                // Float formats are kept only to be made per answer: holding them, the
                // conversion costs about what reading them back would.
                let kept = match (sha256, &scratch) {
                    _ if float && !per_answer && !is_served(p.format) => None,
                    (Some(sha), _) => Some(kept_path(sha, p)),
                    (None, Some(dir)) => Some(dir.path().join(kept_name(p))),
                    (None, None) => None,
                };
                Maker {
                    format: p.format,
                    weights: path.clone(),
                    kept,
                    served: match (&source, &tables) {
                        (Some(w), Some(t)) if is_served(p.format) => {
                            Some((w.config.clone(), t.clone()))
                        }
                        _ => None,
                    },
                }
            })
            .collect();
        // Each format loads on its own (quantising a model is seconds of one core's work): the
        // market's first, while their source weights are held, then llama.cpp's. Made per
        // answer, each is dropped once its kept file is written, and they are made one at a
        // time (requantising holds a matrix's source in f32 beside the format).
        let workers = match per_answer {
            true => 1,
            false => usize::MAX,
        };
        let load = |indices: Vec<usize>, source: Option<&DecoderWeights>| {
            on_workers(indices.len(), workers, |j| {
                let lm = makers[indices[j]].make(source)?;
                Ok::<Option<ForcedLm>, CollectError>((!per_answer).then_some(lm))
            })
            .into_iter()
            .zip(indices)
        };
        let served: Vec<usize> = (0..wanted.len())
            .filter(|i| is_served(wanted[*i].format))
            .collect();
        let mut loaded: Vec<Option<Result<Option<ForcedLm>>>> =
            (0..wanted.len()).map(|_| None).collect();
        for (lm, i) in load(served, source.as_ref()) {
            loaded[i] = Some(lm);
        }
        drop(source);
        let gguf: Vec<usize> = (0..wanted.len()).filter(|i| loaded[*i].is_none()).collect();
        for (lm, i) in load(gguf, None) {
            loaded[i] = Some(lm);
        }
        let mut lms = Vec::with_capacity(wanted.len() + servers.len());
        for ((p, lm), maker) in wanted.into_iter().zip(loaded).zip(makers) {
            let slot = match lm.expect("every format loaded")? {
                Some(lm) => Slot::Held(lm),
                None => Slot::PerAnswer(maker),
            };
            lms.push((p, slot));
        }
        for server in servers {
            lms.push((
                server.platform().clone(),
                Slot::Held(ForcedLm::Server(server)),
            ));
        }
        Ok(ForcedReferences {
            codec: Codec::for_weights(&path)?,
            model_id,
            lms,
            residency,
            _scratch: scratch,
        })
    }

    /// Whether the formats are held between answers or made per answer, as decided.
    pub fn residency(&self) -> Residency {
        self.residency
    }

    pub fn platforms(&self) -> Vec<Platform> {
        self.lms.iter().map(|(p, _)| p.clone()).collect()
    }

    /// The prompt's tokens as the endpoint read them: through the chat template where it was
    /// asked on chat completions (`chat`), else as raw text.
    fn prompt_ids(&self, input: &ProbeInput, chat: bool) -> Result<Vec<u32>> {
        let ProbeInput::Prompt { text, .. } = input else {
            return Err(CollectError::BadRequest(
                "teacher-forced references are for prompts".into(),
            ));
        };
        if chat {
            self.codec.chat_ids(&[Message {
                role: "user".into(),
                content: text.clone(),
            }])
        } else {
            self.codec.text_ids(text)
        }
    }

    /// How many tokens the prompt is, asked through chat completions (`chat`) or not.
    pub fn prompt_len(&self, input: &ProbeInput, chat: bool) -> Result<usize> {
        Ok(self.prompt_ids(input, chat)?.len())
    }

    /// The provider's generated tokens: the ids it printed, else the token each step's bytes
    /// name, else its text read again.
    fn answer_ids(&self, answer: &Record) -> Result<Vec<u32>> {
        let Outputs::Completion { text, steps, .. } = &answer.outputs else {
            return Err(CollectError::BadRequest(format!(
                "answer to probe {} is no completion",
                answer.probe_id
            )));
        };
        // The ids it printed, where each names the same bytes in this model's vocabulary (another
        // vocabulary's ids would name other tokens), else the token printing each step's bytes:
        // its text read again may merge its tokens (Gemma's vocabulary holds runs of newlines,
        // which vLLM generates one at a time), and every position is evidence.
        let ids: Option<Vec<u32>> = steps
            .iter()
            .map(|s| {
                let printed = s.bytes.as_deref().unwrap_or(s.token.as_bytes());
                s.id.filter(|id| self.codec.token_bytes(*id) == printed)
                    .or_else(|| self.codec.token_printing(printed))
            })
            .collect();
        match ids {
            Some(ids) if !steps.is_empty() => Ok(ids),
            _ if text.is_empty() => Ok(Vec::new()),
            _ => self.codec.text_ids(text),
        }
    }

    /// The context an answer is scored on: the prompt's tokens then the provider's, and how many
    /// of them are the prompt's.
    pub fn context_ids(&self, input: &ProbeInput, answer: &Record) -> Result<(Vec<u32>, usize)> {
        let chat = answer.asked_as() == AskedAs::ChatTemplate;
        let mut ids = self.prompt_ids(input, chat)?;
        let prompt = ids.len();
        ids.extend(self.answer_ids(answer)?);
        Ok((ids, prompt))
    }

    /// Per format, its answer on the provider's tokens: at each generated position the
    /// provider's token with its logprob under that format and the format's `top` best.
    pub fn score(
        &mut self,
        input: &ProbeInput,
        answer: &Record,
        top: usize,
    ) -> Result<(Vec<Record>, ForcedCost)> {
        let (context, prompt_len) = self.context_ids(input, answer)?;
        let (prompt, generated) = context.split_at(prompt_len);
        let context = &context;
        let mut cost = ForcedCost {
            positions: generated.len(),
            ..ForcedCost::default()
        };
        if generated.is_empty() {
            return Ok((Vec::new(), cost));
        }
        let text = match &answer.outputs {
            Outputs::Completion { text, .. } => text.clone(),
            _ => String::new(),
        };
        let codec = &self.codec;
        let model_id = &self.model_id;
        // Made per answer, one format at a time: the peak is one format beside the largest's
        // load (Gemma-3-270M: 2.0 times its f32 weights, 2.75 times with one format per core;
        // candle's kernels use every core within one, +13-17 % time). Held, one per core.
        let per_answer = self
            .lms
            .iter()
            .any(|(_, slot)| matches!(slot, Slot::PerAnswer(_)));
        let most = if per_answer { 1 } else { usize::MAX };
        let lms: Vec<std::sync::Mutex<&mut (Platform, Slot)>> =
            self.lms.iter_mut().map(std::sync::Mutex::new).collect();
        let scored: Vec<Result<(Record, f64)>> = on_workers(lms.len(), most, |i| {
            let mut guard = lms[i].lock().expect("one worker per format");
            let (platform, slot) = &mut **guard;
            let start = Instant::now();
            let mut made;
            let lm = match slot {
                Slot::Held(lm) => lm,
                Slot::PerAnswer(maker) => {
                    made = maker.make(None)?;
                    &mut made
                }
            };
            let steps = lm.steps(codec, context, prompt.len(), top)?;
            let elapsed = start.elapsed();
            let record = Record {
                probe_id: answer.probe_id.clone(),
                target: crate::local_target_id(model_id, platform),
                platform: Some(platform.clone()),
                outputs: Outputs::Completion {
                    text: text.clone(),
                    steps,
                    finish_reason: None,
                },
                timing_us: elapsed.as_micros() as u64,
                usage: None,
                served: None,
                asked_as: Some(answer.asked_as()),
            };
            Ok((record, elapsed.as_secs_f64()))
        });
        let mut out = Vec::with_capacity(scored.len());
        for r in scored {
            let (record, seconds) = r?;
            let platform = record.platform.clone().expect("set above");
            cost.seconds.push((platform, seconds));
            out.push(record);
        }
        Ok((out, cost))
    }
}

/// `job(0..n)` on one worker thread per core (at most `most`), the results in index order.
fn on_workers<T: Send>(n: usize, most: usize, job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let workers = std::thread::available_parallelism()
        .map_or(1, usize::from)
        .min(n.max(1))
        .min(most.max(1));
    if workers > 1 {
        crate::backend::candle_cpu::jobs_own_the_cores();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<(usize, T)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            break mine;
                        }
                        mine.push((i, job(i)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a reference worker panicked"))
            .collect()
    });
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, t)| t).collect()
}
