//! `hspi bundle keygen|sign|verify`: signed evidence bundles for procurement.

use std::path::PathBuf;
use std::process::ExitCode;

use hspi_reports::bundle;

use crate::printer;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Write a new ed25519 signing key (hex, file mode 0600) and print its public key.
    Keygen {
        #[arg(long)]
        out: PathBuf,
    },
    /// Copy files and directories (raw responses, probe set, datasets, report) into a new
    /// bundle directory, hash them and sign the manifest.
    Sign {
        /// Files and directories to include.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// The bundle directory to create.
        #[arg(long)]
        out: PathBuf,
        /// File holding the signing key (from `hspi bundle keygen`).
        #[arg(long, conflicts_with = "key_env")]
        key: Option<PathBuf>,
        /// Environment variable holding the signing key (hex).
        #[arg(long, default_value = "HSPI_SIGNING_KEY")]
        key_env: String,
    },
    /// Check a bundle's signature and every file's hash; exit 1 naming the first altered file.
    Verify {
        bundle: PathBuf,
        /// The signer's public key (hex) the bundle must carry.
        #[arg(long)]
        public_key: Option<String>,
    },
}

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
