//! `hspi emulate`: GPU platforms on this CPU — fit kernel plans to a GPU dataset, and check how
//! much of a dataset a plans file reproduces bit for bit (`collect --emulate FILE` then collects
//! references for those GPU platforms without their GPU).

use std::process::ExitCode;

use hspi_cli::emulate::Command;

use crate::printer;

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Fit {
            a,
            platform,
            out,
            passes,
        } => {
            let w = a.weights.as_deref();
            let plans = hspi_audit::fit_plans(&a.answers, &platform, w, passes, &mut |plan| {
                printer::status(&hspi_audit::fitted_line(plan))
            })?;
            plans.save(&out)?;
            printer::status(&format!(
                "wrote {} plans to {}",
                plans.plans.len(),
                out.display()
            ));
            printer::json_or(a.json, &plans, |_| out.display().to_string())?;
        }
        Command::Check { a, plans } => {
            let checks = hspi_audit::check_plans(&plans, &a.answers, a.weights.as_deref())?;
            printer::json_or(a.json, &checks, |c| hspi_audit::checks_text(c))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
