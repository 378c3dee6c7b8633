//! `hspi verify`: is a target serving the claimed platform? Sequential, budget-aware, over an
//! endpoint (queried one probe at a time, every answer stored) or over a collected dataset.

use std::path::PathBuf;

use hspi_audit::VerifySetup;
use hspi_classify::verify::VerifyParams;

use crate::error::CliError;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The claimed platform; any part may be open: */llamacpp/f16/*.
    #[arg(long, help_heading = "Claim")]
    pub claim: String,
    /// A classifier written by `hspi train` (its classes are the claim's alternatives).
    #[arg(long, help_heading = "References (without a pack)")]
    pub classifier: Option<PathBuf>,
    /// hspi's own answers to the probes on the classifier's reference platforms.
    #[arg(long, num_args = 1.., help_heading = "References (without a pack)")]
    pub references: Vec<PathBuf>,
    /// Target probability of calling an honest server a mismatch.
    #[arg(long, default_value_t = 0.01, help_heading = "Statistics")]
    pub false_accusation: f64,
    /// Target probability of calling a mismatched server consistent.
    #[arg(long, default_value_t = 0.01, help_heading = "Statistics")]
    pub false_acceptance: f64,
    /// Call the provider consistent only after enough answers that a share this large of its
    /// requests routed to another format would have shown (e.g. 0.1); a mixture is named
    /// whenever one shows, with or without it.
    #[arg(long, help_heading = "Statistics")]
    pub routed_share: Option<f64>,
    /// Stop (inconclusive) after this many queries.
    #[arg(long, default_value_t = 32, help_heading = "Budget and cost")]
    pub max_queries: usize,
    /// Stop (inconclusive) before the answers' output tokens exceed this.
    #[arg(long, default_value_t = 256, help_heading = "Budget and cost")]
    pub max_tokens_total: u64,
    /// Also write the report model (JSON, for `hspi report`) to this file.
    #[arg(long, help_heading = "Output")]
    pub report: Option<PathBuf>,
    /// Over datasets: repeat the audit this many times, each in a random order, and count verdicts.
    #[arg(long, default_value_t = 0, help_heading = "Over datasets")]
    pub audits: usize,
    /// The first audit's seed (with --audits).
    #[arg(long, default_value_t = 1, help_heading = "Over datasets")]
    pub seed: u64,
    /// Over datasets: show the answers as such an endpoint would (text-only, rounded:fp16, …).
    #[arg(long = "as", default_value = "exact", help_heading = "Over datasets")]
    pub shown_as: hspi_datasets::Presentation,
}

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Datasets of the target's answers (omit with --endpoint).
    pub datasets: Vec<PathBuf>,
    /// Only the answers labelled with this platform (datasets that hold several, such as an
    /// atlas).
    #[arg(long, help_heading = "Over datasets")]
    pub answers_of: Option<hspi_datasets::Platform>,
    /// With --audits: replay a provider that routes a share of its requests elsewhere, each
    /// answered from this dataset's answers with probability SHARE (DIR=SHARE, e.g.
    /// q4_0-answers=0.1).
    #[arg(long, value_name = "DIR=SHARE", help_heading = "Over datasets")]
    pub routed: Option<Routed>,
    #[command(flatten)]
    pub verify: VerifyArgs,
    #[command(flatten)]
    pub target: EndpointTarget,
}

/// The endpoint side of `verify` and `audit`: where to send probes and where to keep answers.
#[derive(Debug, clap::Args)]
pub struct EndpointTarget {
    #[command(flatten)]
    pub endpoint: crate::collect_http::EndpointArgs,
    /// The model name to request from the endpoint.
    #[arg(long, default_value = "", help_heading = "Endpoint")]
    pub model: String,
    /// Probe-set file of prompts (`hspi probe prompts`), the same the references answered.
    #[arg(long, default_value = "", help_heading = "Pack and prompts")]
    pub probes: String,
    /// Dataset directory for every answer received (kept whatever the verdict).
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Replace an existing --out dataset.
    #[arg(long, help_heading = "Output")]
    pub force: bool,
    /// Print JSON.
    #[arg(long, help_heading = "Output")]
    pub json: bool,
}

impl EndpointTarget {
    pub fn collect_args(&self) -> Result<crate::collect::Args, CliError> {
        let Some(out) = &self.out else {
            return Err(CliError::Missing(
                "--endpoint needs --out DIR: every answer is stored, whatever the verdict",
            ));
        };
        if self.model.is_empty() || self.probes.is_empty() {
            return Err(CliError::Missing(
                "--endpoint needs --model NAME and --probes FILE (prompts the references answered)",
            ));
        }
        // An audit goes on when logprobs do not come back: it says so and weighs the text.
        let mut endpoint = self.endpoint.clone();
        endpoint.text_only = true;
        Ok(crate::collect::Args {
            model: self.model.clone(),
            probes: self.probes.clone(),
            out: out.clone(),
            force: self.force,
            endpoint,
            ..Default::default()
        })
    }
}

impl VerifyArgs {
    pub fn params(&self) -> VerifyParams {
        VerifyParams {
            false_accusation: self.false_accusation,
            false_acceptance: self.false_acceptance,
            max_queries: self.max_queries,
            max_output_tokens: self.max_tokens_total,
            routed_share: self.routed_share,
            ..VerifyParams::default()
        }
    }

    pub fn setup(&self) -> Result<VerifySetup, CliError> {
        let (claim, refs) = (&self.claim, &self.references);
        let Some(classifier) = &self.classifier else {
            if !refs.is_empty() {
                // A fresh audit's own references (OUT/references) stand without a classifier.
                return Ok(VerifySetup::references_only(claim, refs, self.params())?);
            }
            return Err(CliError::Missing(
                "--classifier FILE is needed (or, for hspi audit, --pack DIR; or --references OUT/references of a fresh-prompt audit)",
            ));
        };
        Ok(VerifySetup::load(claim, classifier, refs, self.params())?)
    }
}

/// `--routed DIR=SHARE`: a replayed provider answering SHARE of its requests from DIR's answers.
#[derive(Debug, Clone, PartialEq)]
pub struct Routed {
    pub dir: PathBuf,
    pub share: f64,
}

impl std::str::FromStr for Routed {
    type Err = CliError;

    fn from_str(s: &str) -> Result<Routed, CliError> {
        let bad = |why| CliError::BadRouted {
            value: s.to_string(),
            why,
        };
        let (dir, share) = s
            .rsplit_once('=')
            .ok_or_else(|| bad("expected DIR=SHARE (answers=0.1)"))?;
        let share: f64 = share
            .parse()
            .map_err(|_| bad("the share must be a number in (0, 1)"))?;
        if !(share > 0.0 && share < 1.0) {
            return Err(bad("the share must lie in (0, 1)"));
        }
        Ok(Routed {
            dir: PathBuf::from(dir),
            share,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routed_reads_dir_and_share_and_names_a_bad_one() {
        let r: Routed = "q4/answers=0.1".parse().unwrap();
        assert_eq!(
            r,
            Routed {
                dir: "q4/answers".into(),
                share: 0.1
            }
        );
        for bad in ["q4", "q4=ten", "q4=1.5", "q4=0"] {
            let e = bad.parse::<Routed>().unwrap_err().to_string();
            assert!(e.starts_with(&format!("--routed {bad}: ")), "{e}");
        }
    }
}
