use std::path::PathBuf;

use hspi_datasets::export::ExportFormat;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Export records as one flat table (pandas/polars read it with no hspi code).
    Export {
        /// Dataset directory.
        dataset: PathBuf,
        /// csv or parquet.
        #[arg(long)]
        format: ExportFormat,
        /// Output file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Check the manifest, checksums and every record.
    Verify {
        /// Dataset directory.
        dataset: PathBuf,
    },
    /// Compare two datasets record for record: the same platform (or the only one on each side)
    /// answering the same probes with the same bits? Exit 0 when all are identical, 1 otherwise.
    Diff {
        left: PathBuf,
        right: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge shard datasets (e.g. an atlas plan's shards) into one, checking probe set, model
    /// and schema, refusing duplicate records, keeping every shard's provenance.
    Merge {
        /// Shard dataset directories.
        #[arg(required = true)]
        shards: Vec<PathBuf>,
        /// The merged dataset directory (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
}
