//! What a verdict is weighed against: the classifier, hspi's own reference answers and the
//! claim; and a verification over collected answers.

use std::path::{Path, PathBuf};

use hspi_classify::repeated_audits::{repeat_audits, AuditTally, RoutedReplay};
use hspi_classify::verify::{Verifier, VerifyParams, VerifyReport};
use hspi_classify::{run_audit, PlatformModel, RecordSource, ReferenceIndex};
use hspi_datasets::store::load_one_model;
use hspi_datasets::store::OneModel;
use hspi_datasets::{Dimension, Platform, PlatformPattern, Presentation, Record};
use hspi_reports::report::{Atlas, Context, Report, Spent, Subject};

use crate::error::AuditError;

pub struct VerifySetup {
    pub model: PlatformModel,
    pub references: ReferenceIndex,
    pub reference_dirs: Vec<PathBuf>,
    pub claim: PlatformPattern,
    pub params: VerifyParams,
}

/// Records of reference datasets (none when no directory is given).
pub fn load_references(dirs: &[PathBuf]) -> Result<Vec<Record>, AuditError> {
    Ok(if dirs.is_empty() {
        Vec::new()
    } else {
        load_one_model(dirs)?.records
    })
}

impl VerifySetup {
    pub fn load(
        claim: &str,
        classifier: &Path,
        references: &[PathBuf],
        params: VerifyParams,
    ) -> Result<VerifySetup, AuditError> {
        let claim: PlatformPattern = claim.parse()?;
        let model = PlatformModel::load(classifier)?;
        let references_index = ReferenceIndex::new(&load_references(references)?);
        Ok(VerifySetup {
            model,
            references: references_index,
            reference_dirs: references.to_vec(),
            claim,
            params,
        })
    }

    /// References that stand alone, without a classifier: those a fresh-prompt audit computed on
    /// the provider's own tokens (`OUT/references`). One class per platform they hold; the claim
    /// is tested on its format (and the model) only.
    pub fn references_only(
        claim: &str,
        references: &[PathBuf],
        params: VerifyParams,
    ) -> Result<VerifySetup, AuditError> {
        let claim = format_claim(claim)?;
        let data = load_one_model(references)?;
        let mut platforms: Vec<Platform> = data
            .records
            .iter()
            .filter_map(|r| r.platform.clone())
            .collect();
        platforms.sort_by_key(|p| p.to_string());
        platforms.dedup();
        let width = data
            .records
            .iter()
            .filter_map(|r| match &r.outputs {
                hspi_datasets::Outputs::Completion { steps, .. } => {
                    steps.iter().map(|s| s.top.len()).max()
                }
                _ => None,
            })
            .max()
            .unwrap_or(0);
        Ok(VerifySetup {
            model: PlatformModel::references_only(data.model, &platforms, width),
            references: ReferenceIndex::new(&data.records),
            reference_dirs: references.to_vec(),
            claim,
            params,
        })
    }

    pub fn verifier(&self) -> Result<Verifier<'_>, AuditError> {
        Ok(Verifier::new(
            &self.model,
            &self.references,
            self.claim.clone(),
            self.params.clone(),
        )?)
    }

    /// The report context: what was audited, what it cost, what it was weighed against.
    pub fn context(&self, subject: Subject, spent: Spent) -> Context {
        let atlas = Atlas::new(
            Some(self.model.id.clone()),
            &self.model.classes,
            &self.reference_dirs,
        );
        Context::now(subject, spent, atlas)
    }
}

/// The claim a fresh audit tests: its format (and the model) only, as hspi's own engine stands in
/// for every other dimension.
pub(crate) fn format_claim(claim: &str) -> Result<PlatformPattern, AuditError> {
    let claim: PlatformPattern = claim.parse()?;
    if claim.get(Dimension::Format).is_none() {
        return Err(AuditError::ClaimNamesNoFormat {
            claim: claim.to_string(),
        });
    }
    let others: Vec<Dimension> = Dimension::ALL
        .into_iter()
        .filter(|d| *d != Dimension::Format)
        .collect();
    Ok(claim.opened(&others))
}

/// The target's answers in `dirs` (only those labelled `of` when given: `--answers-of`), as an
/// endpoint with `presentation` would have shown them (`--as`).
fn answers(
    dirs: &[PathBuf],
    of: Option<&Platform>,
    presentation: Presentation,
) -> Result<OneModel, AuditError> {
    let mut data = load_one_model(dirs)?;
    if let Some(platform) = of {
        let mut labels: Vec<String> = data
            .records
            .iter()
            .filter_map(|r| r.platform.as_ref().map(|p| p.to_string()))
            .collect();
        labels.sort();
        labels.dedup();
        data.records
            .retain(|r| r.platform.as_ref() == Some(platform));
        if data.records.is_empty() {
            return Err(AuditError::NoSuchAnswers {
                platform: platform.to_string(),
                holds: labels.join(", "),
            });
        }
    }
    for r in &mut data.records {
        r.outputs = presentation.show(&r.outputs);
    }
    Ok(data)
}

/// Verify the claim over collected answers of one target (`hspi verify DIR...`); the report model
/// is returned with the verdict for `--report`.
/// The same audit `audits` times over seeded random orders of the datasets' answers; with
/// `routed` (`--routed DIR=SHARE`), each request answered from DIR's answers with probability
/// SHARE, as a provider routing that share of its traffic elsewhere would.
pub fn repeat_verify_datasets(
    s: &VerifySetup,
    dirs: &[PathBuf],
    of: Option<&Platform>,
    audits: usize,
    seed: u64,
    shown_as: Presentation,
    routed: Option<(&[PathBuf], f64)>,
) -> Result<AuditTally, AuditError> {
    let data = answers(dirs, of, shown_as)?;
    let all: Vec<&Record> = data.records.iter().collect();
    s.model.check_compatible(&data.model, &all)?;
    let elsewhere = match routed {
        Some((dirs, _)) => {
            let other = answers(dirs, None, shown_as)?;
            let all: Vec<&Record> = other.records.iter().collect();
            s.model.check_compatible(&other.model, &all)?;
            Some(other.records)
        }
        None => None,
    };
    let replay = elsewhere
        .as_deref()
        .zip(routed)
        .map(|(records, (_, share))| RoutedReplay { records, share });
    let verifier = || Verifier::new(&s.model, &s.references, s.claim.clone(), s.params.clone());
    Ok(repeat_audits(
        &verifier,
        &data.records,
        audits,
        seed,
        replay,
    )?)
}

pub fn verify_datasets(
    s: &VerifySetup,
    dirs: &[PathBuf],
    of: Option<&Platform>,
    shown_as: Presentation,
) -> Result<(VerifyReport, Report), AuditError> {
    let data = answers(dirs, of, shown_as)?;
    let all: Vec<&Record> = data.records.iter().collect();
    s.model.check_compatible(&data.model, &all)?;
    let mut source = RecordSource::new(&data.records)?;
    let report = run_audit(s.verifier()?, &mut source, &mut |_, _| Ok(()))?.report;
    let subject = Subject {
        architecture: None,
        endpoint: data.records.first().map(|r| r.target.clone()),
        model: data.model.id.clone(),
        claim: Some(report.claim.clone()),
    };
    let spent = Spent {
        queries: report.queries as u64,
        requests: report.queries as u64,
        output_tokens: report.output_tokens,
        cost: 0.0,
    };
    let model = Report::from_verify(s.context(subject, spent), report.clone());
    Ok((report, model))
}
