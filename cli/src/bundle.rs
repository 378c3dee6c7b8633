//! `hspi bundle keygen|sign|verify`: signed evidence bundles for procurement.

use std::path::PathBuf;

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
