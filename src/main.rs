//! hspi: hardware and software platform inference. The binary is glue: it parses the command line,
//! calls the libraries, and maps outcomes to exit codes (0 ok, 1 mismatch, mixed or tampered, 2 error,
//! 3 inconclusive, 4 unknown platform, 5 the endpoint went down mid-audit).

mod cli;
mod printer;
mod progress;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = hspi_cli::Cli::parse();
    match cli::run(args) {
        Ok(code) => code,
        Err(e) => {
            printer::error(&e);
            ExitCode::from(2)
        }
    }
}
