//! A teacher-forced reference session: for each answer an endpoint gives to a prompt made for
//! this audit, every format's references on the provider's own tokens, computed and written as
//! they come (a dataset beside the answers, so the evidence is kept with its provenance).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hspi_datasets::{
    manifest::unix_now, DatasetWriter, Manifest, ModelInfo, NumericFormat, OpenMode, Platform,
    ProbeInput, ProbeSet, Record, SCHEMA_VERSION,
};

use super::{new_session, probe_set_info};
use crate::error::Result;
use crate::teacher_forced::{ForcedCost, ForcedReferences};

pub struct ForcedSession {
    engines: ForcedReferences,
    inputs: HashMap<String, (ProbeInput, usize)>,
    writer: DatasetWriter,
    /// What each answer's references cost, in the order they were computed.
    pub costs: Vec<ForcedCost>,
}

impl ForcedSession {
    /// hspi's engines for `weights` at `formats` (every one it computes when empty), and a
    /// dataset at `out` for their answers to `probes`. `model` is the identity the weights were
    /// checked against (it names the dataset's model).
    pub fn open(
        weights: &Path,
        formats: &[NumericFormat],
        model: ModelInfo,
        probes: &ProbeSet,
        out: &Path,
        mode: OpenMode,
        command: &str,
    ) -> Result<ForcedSession> {
        let engines = ForcedReferences::open(weights, formats)?;
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            created_unix: unix_now(),
            model,
            probe_set: probe_set_info(probes),
            platforms: engines.platforms(),
            sessions: Vec::new(),
        };
        let writer = DatasetWriter::open(out, &manifest, probes, new_session(command), mode)?;
        let inputs = probes
            .probes
            .iter()
            .map(|p| {
                let top = match &p.input {
                    ProbeInput::Prompt { params, .. } => params.top_logprobs as usize,
                    _ => 0,
                };
                (p.id.clone(), (p.input.clone(), top.max(1)))
            })
            .collect();
        Ok(ForcedSession {
            engines,
            inputs,
            writer,
            costs: Vec::new(),
        })
    }

    pub fn platforms(&self) -> Vec<Platform> {
        self.engines.platforms()
    }

    /// Every format's answer on `answer`'s tokens, written before they are returned.
    pub fn references(&mut self, answer: &Record) -> Result<Vec<Record>> {
        let Some((input, top)) = self.inputs.get(&answer.probe_id) else {
            return Ok(Vec::new());
        };
        let (records, cost) = self.engines.score(input, answer, *top)?;
        self.writer.append(&records)?;
        self.costs.push(cost);
        Ok(records)
    }

    /// Per probe, the prompt tokens a chat request (`chat`) or a completion request bills.
    pub fn prompt_tokens(&self, chat: bool) -> BTreeMap<String, u64> {
        self.inputs
            .iter()
            .filter_map(|(id, (input, _))| {
                Some((
                    id.clone(),
                    self.engines.prompt_len(input, chat).ok()? as u64,
                ))
            })
            .collect()
    }

    /// Seal the dataset.
    pub fn finish(self) -> Result<()> {
        self.writer.finish()?;
        Ok(())
    }
}
