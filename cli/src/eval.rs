//! `hspi eval`: the HSPI paper's tables for our grid, on test probes never seen in training.

use std::path::PathBuf;

use crate::classifier::FeatureArgs;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Labelled datasets to train on.
    #[arg(long, required = true, num_args = 1.., help_heading = "Data")]
    pub train: Vec<PathBuf>,
    /// Labelled datasets to test on (other probes than training, for a fair score).
    #[arg(long, required = true, num_args = 1.., help_heading = "Data")]
    pub test: Vec<PathBuf>,
    #[command(flatten)]
    pub features: FeatureArgs,
    /// Queries per decision for the accuracy curve, comma-separated.
    #[arg(long, default_value = "1,2,4,8,16,32", help_heading = "Evaluation")]
    pub queries: String,
    /// Hold out at most this many classes (one at a time) for the unknown-platform table.
    #[arg(long, default_value_t = 8, help_heading = "Evaluation")]
    pub held_out: usize,
    /// Instead, hold out together every class with a member matching this pattern.
    #[arg(long, help_heading = "Evaluation")]
    pub hold_out: Option<hspi_datasets::PlatformPattern>,
    /// Datasets of another model, labelled with the same platforms: cross-model transfer.
    #[arg(long, num_args = 1.., help_heading = "Data")]
    pub transfer: Vec<PathBuf>,
    /// Seed for drawing query sets.
    #[arg(long, default_value_t = 0, help_heading = "Evaluation")]
    pub seed: u64,
    /// Show the TEST answers as an endpoint would first: text-only, rounded:fp16, rounded:4dp…
    #[arg(long = "as", default_value = "exact", help_heading = "Evaluation")]
    pub shown_as: hspi_datasets::Presentation,
    /// Print JSON instead of Markdown.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long, help_heading = "Output")]
    pub report: Option<PathBuf>,
}
