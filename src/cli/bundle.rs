//! `hspi bundle keygen|sign|verify`: signed evidence bundles for procurement.

use std::process::ExitCode;

use hspi_cli::bundle::Command;
use hspi_reports::bundle;

use crate::printer;

pub fn run(c: Command) -> anyhow::Result<ExitCode> {
    match c {
        Command::Keygen { out } => {
            let public = bundle::write_new_key(&out)?;
            printer::status(&format!("signing key written to {}", out.display()));
            printer::data(&public);
            Ok(ExitCode::SUCCESS)
        }
        Command::Sign {
            inputs,
            out,
            key,
            key_env,
        } => {
            let key = bundle::load_secret(key.as_deref(), &key_env)?;
            let m = bundle::sign(&out, &inputs, &key, hspi_datasets::manifest::unix_now())?;
            printer::status(&format!(
                "signed {} files into {}",
                m.files.len(),
                out.display()
            ));
            printer::data(&m.public_key);
            Ok(ExitCode::SUCCESS)
        }
        Command::Verify {
            bundle: dir,
            public_key,
        } => match bundle::verify(&dir, public_key.as_deref()) {
            Ok(m) => {
                printer::data(&format!(
                    "bundle {} verified: {} files, signed by {}",
                    dir.display(),
                    m.files.len(),
                    m.public_key
                ));
                Ok(ExitCode::SUCCESS)
            }
            Err(e @ bundle::BundleError::Invalid { .. }) => {
                printer::error(&anyhow::anyhow!("verification failed: {e}"));
                Ok(ExitCode::from(1))
            }
            Err(e) => Err(e.into()),
        },
    }
}
