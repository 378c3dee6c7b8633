use std::path::PathBuf;
use std::process::ExitCode;

use hspi_collect::{grid, serve, zoo::TinyLm};
use hspi_datasets::{Dataset, NumericFormat, Outputs};

use crate::printer;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Where to keep the demo datasets (default: a fresh directory under the system temp dir).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Number of seeded random probes for the CNN grid.
    #[arg(long, default_value_t = 64)]
    probes: usize,
}

/// The embedded defaults end to end, with no network and no download: the CNN over the CPU grid
/// and its EQCs, then the tiny LM served on loopback and collected from over HTTP.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let out = args
        .out
        .unwrap_or_else(|| std::env::temp_dir().join(format!("hspi-demo-{}", std::process::id())));
    let cnn = out.join("cnn");
    printer::status(&format!(
        "hspi demo 1/2: the embedded digits CNN on every CPU platform of the default grid, {} probes",
        args.probes
    ));
    let collect_args = super::collect::Args {
        model: "cnn-digits".into(),
        platforms: "default".into(),
        probes: args.probes.to_string(),
        seed: 1,
        out: cnn.clone(),
        force: true,
        ..Default::default()
    };
    super::collect::collect_local(&collect_args)?;
    let grouping = hspi_classify::group_eqcs(&Dataset::open(&cnn)?.records()?)?;
    printer::data(&hspi_reports::eqc_table::render_text(&grouping));

    let platform = grid::tiny_lm_grid()
        .into_iter()
        .find(|p| p.format == NumericFormat::Bf16)
        .expect("the tiny LM grid has bf16");
    let server = serve::start(TinyLm::embedded(), &platform, "127.0.0.1:0")?;
    let url = format!("{}/chat/completions", server.base_url());
    printer::status(&format!(
        "hspi demo 2/2: serving the embedded tiny LM at {platform} on {}, collecting 8 prompts over HTTP",
        server.base_url()
    ));
    let served = out.join("served");
    let mut http_args = super::collect::Args {
        model: "tiny-lm".into(),
        probes: "8".into(),
        seed: 1,
        out: served.clone(),
        force: true,
        ..Default::default()
    };
    http_args.endpoint.endpoint = Some(url.clone());
    http_args.endpoint.concurrency = 2;
    http_args.endpoint.max_tokens = 8;
    http_args.endpoint.top_logprobs = 5;
    http_args.endpoint.timeout = 60.0;
    http_args.endpoint.retries = 2;
    super::collect_http::run(&http_args)?;
    let records = Dataset::open(&served)?.records()?;
    let (mut steps, mut exact) = (0, 0);
    for r in &records {
        if let Outputs::Completion { steps: s, .. } = &r.outputs {
            steps += s.len();
            exact += s
                .iter()
                .filter(|s| s.logprob.as_ref().is_some_and(|l| l.exact_f32))
                .count();
        }
    }
    printer::data(&format!(
        "{} completions from {url}: {steps} generated tokens with top-5 logprobs, {exact} of them exact f32 bit patterns",
        records.len()
    ));
    printer::status(&format!(
        "datasets kept in {} (try `hspi eqc {}` or `hspi dataset export {} --format csv --out records.csv`)",
        out.display(),
        cnn.display(),
        cnn.display()
    ));
    Ok(ExitCode::SUCCESS)
}
