//! Name the platform (EQC) behind each target's answers in collected datasets.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use hspi_classify::{Identification, PlatformModel, ReferenceIndex};
use hspi_datasets::store::load_one_model;
use hspi_datasets::Record;
use hspi_reports::report::{Atlas, Context, Report, Spent, Subject};

use crate::error::AuditError;
use crate::setup::load_references;

/// One identification per target (and per platform label, when a dataset holds several), each
/// from at most `queries` answers, with the report model for `--report`.
pub fn identify_datasets(
    classifier: &Path,
    dirs: &[PathBuf],
    references: &[PathBuf],
    queries: Option<usize>,
) -> Result<(Vec<Identification>, Report), AuditError> {
    let model = PlatformModel::load(classifier)?;
    let data = load_one_model(dirs)?;
    let all: Vec<&Record> = data.records.iter().collect();
    model.check_compatible(&data.model, &all)?;
    let index = ReferenceIndex::new(&load_references(references)?);
    let mut groups: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
    for r in &data.records {
        let key = r
            .platform
            .as_ref()
            .map_or_else(|| r.target.clone(), |p| format!("{} {p}", r.target));
        groups.entry(key).or_default().push(r);
    }
    let ids: Vec<Identification> = groups
        .values()
        .map(|records| {
            let n = queries.unwrap_or(records.len()).min(records.len());
            model.identify(&records[..n], &index)
        })
        .collect();
    let queries: u64 = ids.iter().map(|i| i.queries as u64).sum();
    let ctx = Context::now(
        Subject {
            architecture: None,
            endpoint: None,
            model: data.model.id.clone(),
            claim: None,
        },
        Spent {
            queries,
            requests: queries,
            output_tokens: ids.iter().map(|i| i.output_tokens).sum(),
            cost: 0.0,
        },
        Atlas::new(Some(model.id.clone()), &model.classes, references),
    );
    let report = Report::from_identify(ctx, ids.clone());
    Ok((ids, report))
}
