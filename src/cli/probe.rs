use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::{Model, ModelId};

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Seeded random probes for a model (8-bit images, or token ids).
    Random {
        #[arg(long, default_value = "cnn-digits")]
        model: String,
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Numeric-stress probes: images (saturated, bf16 rounding midpoints, near-cancelling) for image
    /// models; for tiny-lm, prompts whose top-2 next-token logits are nearest a tie.
    Stress {
        #[arg(long, default_value = "cnn-digits")]
        model: String,
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// The fewest probes of a collected probe set that still separate every pair of EQCs.
    Minimize {
        /// Dataset directories over one probe set.
        #[arg(required = true)]
        datasets: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Print the coverage report as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Border inputs (HSPI-BI): for every pair of EQCs in a dataset of an image model, an 8-bit
    /// input on which the two classes' top labels differ; reports majority-vote identification.
    Border {
        /// Dataset directories over one probe set (their EQCs are the classes to separate).
        #[arg(required = true)]
        datasets: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Forward passes per pair in the local search, each platform's counted.
        #[arg(long, default_value_t = hspi_probe::border::BorderConfig::default().search_evals)]
        evals: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        json: bool,
    },
    /// Border prompts: among prompts collected from labelled platforms (one dataset each), per
    /// pair of platforms the prompt on which their greedy generations diverge earliest.
    ///
    /// With `--white-box`, the prompts are run locally instead: SmolLM2's full next-token logits at
    /// each of `--formats` (candle), on `--count` seeded word-list prompts; a prompt splits two
    /// formats when their greedy next tokens differ, and a set cover keeps few prompts.
    BorderPrompts {
        /// Dataset directories over one prompt set, each from a labelled platform.
        #[arg(required_unless_present = "white_box")]
        datasets: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        /// Search white-box on SmolLM2 (after `hspi fetch smollm2`) rather than in datasets.
        #[arg(long, conflicts_with = "datasets")]
        white_box: bool,
        /// Formats to split, white-box (llama.cpp's usual grid).
        #[arg(long, value_delimiter = ',', default_value = "f32,f16,q8_0,q4_0")]
        formats: Vec<String>,
        /// Candidate prompts, white-box.
        #[arg(long, default_value_t = 200)]
        count: usize,
        #[command(flatten)]
        prompt: PromptArgs,
        /// SmolLM2 GGUF file (default: the `hspi fetch smollm2` cache).
        #[arg(long)]
        weights: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Seeded text prompts for endpoints (temperature 0, top-k logprobs).
    Prompts {
        #[arg(long, default_value_t = 20)]
        count: usize,
        #[command(flatten)]
        prompt: PromptArgs,
        #[arg(long)]
        out: PathBuf,
    },
}

/// How seeded word-list prompts are generated and what each asks for.
#[derive(Debug, clap::Args)]
pub struct PromptArgs {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Tokens to generate per prompt.
    #[arg(long, default_value_t = 8)]
    max_tokens: u32,
    /// Alternatives with logprobs per generated token.
    #[arg(long, default_value_t = 5)]
    top_logprobs: u32,
}

impl PromptArgs {
    fn prompts(&self, count: usize) -> hspi_datasets::ProbeSet {
        hspi_probe::prompts(self.seed, count, self.max_tokens, self.top_logprobs)
    }
}

fn minimize(datasets: &[PathBuf], out: &std::path::Path, json: bool) -> anyhow::Result<()> {
    use std::collections::BTreeMap;
    let (records, probes) = super::eqc::load_records(datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    let representatives: Vec<String> = grouping
        .eqcs
        .iter()
        .map(|e| e.members[0].to_string())
        .collect();
    let mut outputs = BTreeMap::new();
    for r in &records {
        let key = r.platform_key();
        outputs.insert((key, r.probe_id.clone()), r.outputs.identity_bytes());
    }
    let order: Vec<String> = probes.probes.iter().map(|p| p.id.clone()).collect();
    let cover = hspi_probe::minimize::greedy_cover(&hspi_probe::minimize::output_table(
        &order,
        &representatives,
        &outputs,
    ));
    let set = hspi_datasets::ProbeSet {
        generator: format!("minimized:{}", probes.generator),
        seed: probes.seed,
        probes: cover
            .chosen
            .iter()
            .map(|i| probes.probes[*i].clone())
            .collect(),
    };
    write(&set, out)?;
    let report = serde_json::json!({
        "eqcs": grouping.eqcs.len(),
        "pairs": cover.pairs,
        "covered": cover.covered,
        "probes_available": probes.probes.len(),
        "probes_chosen": cover.chosen.len(),
        "inseparable": cover.inseparable,
    });
    if json {
        printer::data(&serde_json::to_string_pretty(&report)?);
    } else {
        printer::data(&format!(
            "{} of {} probes separate {} of {} EQC pairs ({} EQCs)",
            cover.chosen.len(),
            probes.probes.len(),
            cover.covered,
            cover.pairs,
            grouping.eqcs.len()
        ));
    }
    Ok(())
}

fn write(set: &hspi_datasets::ProbeSet, out: &std::path::Path) -> anyhow::Result<()> {
    hspi_probe::write_probe_set(out, set)?;
    printer::status(&format!(
        "wrote {} probes (set {}) to {}",
        set.probes.len(),
        &set.hash()[..12],
        out.display()
    ));
    Ok(())
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Random {
            model,
            count,
            seed,
            out,
        } => {
            let id = ModelId::parse(&model)?;
            // Only the input shape matters here, so the language model needs no weights.
            let set = match id {
                ModelId::SmolLm2 => hspi_probe::random_tokens(seed, count, 49152, 12),
                _ => {
                    let m = Model::load(id, None)?;
                    hspi_probe::for_model(&m, &count.to_string(), seed)?
                }
            };
            write(&set, &out)?;
        }
        Command::Stress {
            model,
            count,
            seed,
            out,
        } => {
            let set = match Model::load(ModelId::parse(&model)?, None)? {
                Model::Image(m) => hspi_probe::stress_images(seed, count, m.input_shape),
                Model::Tiny(lm) => {
                    // Ten candidates per prompt kept, scored on the f32 reference.
                    let candidates = hspi_probe::prompts(seed, count * 10, 8, 5);
                    let f32 = hspi_collect::grid::candle_dtype(hspi_datasets::NumericFormat::F32);
                    let runner = hspi_collect::zoo::TinyLmRunner::new(&lm, f32)?;
                    hspi_probe::near_tie::near_tied(&lm, &runner, &candidates, count)?
                }
                Model::Lm { .. } => anyhow::bail!(
                    "near-tie prompt selection needs the model's tokenizer; {model} has none in hspi yet (use tiny-lm)"
                ),
            };
            write(&set, &out)?;
        }
        Command::Minimize {
            datasets,
            out,
            json,
        } => minimize(&datasets, &out, json)?,
        Command::Border {
            datasets,
            out,
            evals,
            seed,
            json,
        } => super::border::run(&datasets, &out, evals, seed, json)?,
        Command::BorderPrompts {
            datasets,
            out,
            white_box,
            formats,
            count,
            prompt,
            weights,
            json,
        } => {
            if white_box {
                let candidates = prompt.prompts(count);
                super::border_prompts::white_box(
                    weights.as_deref(),
                    &formats,
                    &candidates,
                    &out,
                    json,
                )?
            } else {
                super::border_prompts::run(&datasets, &out, json)?
            }
        }
        Command::Prompts { count, prompt, out } => write(&prompt.prompts(count), &out)?,
    }
    Ok(ExitCode::SUCCESS)
}
