use std::process::ExitCode;

use hspi_cli::probe::Command;
use hspi_collect::ModelId;
use hspi_datasets::ProbeSet;

use crate::printer;

fn write(set: &ProbeSet, out: &std::path::Path) -> anyhow::Result<()> {
    printer::status(&hspi_probe::save_probe_set(out, set)?);
    Ok(())
}

fn report<R: serde::Serialize + std::fmt::Display>(
    r: &R,
    set: &ProbeSet,
    out: &std::path::Path,
    json: bool,
) -> anyhow::Result<()> {
    write(set, out)?;
    printer::json_or(json, r, ToString::to_string)
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Random(g) => write(
            &hspi_probe::random_for(ModelId::parse(&g.model)?, g.count, g.seed)?,
            &g.out,
        )?,
        Command::Stress(g) => write(
            &hspi_probe::stress_for(ModelId::parse(&g.model)?, g.count, g.seed)?,
            &g.out,
        )?,
        Command::Minimize(f) => {
            let m = hspi_probe::minimize::minimize(&f.datasets)?;
            report(&m, &m.set, &f.out, f.json)?;
        }
        Command::Border {
            found: f,
            evals,
            seed,
        } => {
            let b = hspi_probe::border::border_inputs(&f.datasets, evals, seed)?;
            report(&b, &b.set, &f.out, f.json)?;
        }
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
                let w = hspi_probe::border_prompts::white_box(
                    weights.as_deref(),
                    &formats,
                    &candidates,
                )?;
                report(&w, &w.set, &out, json)?;
            } else {
                let d = hspi_probe::divergent_prompts(&datasets)?;
                report(&d, &d.set, &out, json)?;
            }
        }
        Command::Prompts { count, prompt, out } => write(&prompt.prompts(count), &out)?,
    }
    Ok(ExitCode::SUCCESS)
}
