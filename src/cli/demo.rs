use std::path::PathBuf;
use std::process::ExitCode;

use hspi_datasets::Dataset;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to keep the demo dataset (default: a fresh directory under the system temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of seeded random probes.
    #[arg(long, default_value_t = 64)]
    probes: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .unwrap_or_else(|| std::env::temp_dir().join(format!("hspi-demo-{}", std::process::id())));
    printer::status(&format!(
        "hspi demo: the embedded digits CNN on every CPU platform of the default grid, {} probes",
        args.probes
    ));
    let collect_args = super::collect::Args {
        model: "cnn-digits".into(),
        platforms: "default".into(),
        probes: args.probes.to_string(),
        seed: 1,
        weights: None,
        out: out.clone(),
        force: true,
        ..Default::default()
    };
    super::collect::collect_local(&collect_args)?;
    let grouping = hspi_classify::group_eqcs(&Dataset::open(&out)?.records()?)?;
    printer::data(&hspi_reports::eqc_table::render_text(&grouping));
    printer::status(&format!(
        "dataset kept in {} (try `hspi eqc {0}` or `hspi dataset export {0} --format csv --out records.csv`)",
        out.display()
    ));
    Ok(ExitCode::SUCCESS)
}
