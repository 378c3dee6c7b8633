use std::process::ExitCode;

use hspi_cli::serve::Args;
use hspi_collect::serve;
use hspi_collect::zoo::{Model, ModelId};

use crate::printer;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let id = ModelId::parse(&args.model)?;
    let platform = args.platform.parse()?;
    let model = Model::load(id, args.weights.as_deref())?;
    let handle = serve::start(model, &platform, &format!("{}:{}", args.host, args.port))?;
    printer::status(&format!(
        "serving {} at {platform} on {}",
        id.name(),
        handle.base_url()
    ));
    printer::data(&handle.base_url());
    handle.join();
    Ok(ExitCode::SUCCESS)
}
