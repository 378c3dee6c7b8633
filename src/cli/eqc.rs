use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use hspi_datasets::Dataset;

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Dataset directories (several: e.g. one per endpoint), all over the same probe set.
    #[arg(required = true)]
    pub datasets: Vec<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Every record of several datasets over one probe set, and that probe set.
pub fn load_records(
    dirs: &[PathBuf],
) -> anyhow::Result<(Vec<hspi_datasets::Record>, hspi_datasets::ProbeSet)> {
    let mut records = Vec::new();
    let mut first: Option<(PathBuf, String)> = None;
    let mut probes = None;
    for dir in dirs {
        let d = Dataset::open(dir)?;
        match &first {
            None => first = Some((dir.clone(), d.manifest.probe_set.hash.clone())),
            Some((f, hash)) if *hash != d.manifest.probe_set.hash => bail!(
                "{} and {} hold different probe sets ({} vs {}): EQCs compare the same probes",
                f.display(),
                dir.display(),
                &hash[..12],
                &d.manifest.probe_set.hash[..12]
            ),
            Some(_) => {}
        }
        if probes.is_none() {
            probes = Some(d.probe_set()?);
        }
        records.extend(d.records()?);
    }
    Ok((
        records,
        probes.expect("at least one dataset (clap requires one)"),
    ))
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (records, _) = load_records(&args.datasets)?;
    let grouping = hspi_classify::group_eqcs(&records)?;
    printer::data(&if args.json {
        hspi_reports::eqc_table::render_json(&grouping)
    } else {
        hspi_reports::eqc_table::render_text(&grouping)
    });
    Ok(ExitCode::SUCCESS)
}
