//! A teacher-forced reference session: for each answer an endpoint gives to a prompt made for
//! this audit, every format's references on the provider's own tokens, computed and written as
//! they come (a dataset beside the answers, so the evidence is kept with its provenance).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use hspi_datasets::{
    manifest::unix_now, DatasetWriter, Manifest, ModelInfo, OpenMode, Platform, ProbeInput,
    ProbeSet, Record, SCHEMA_VERSION,
};

use super::{new_session, probe_set_info};
use crate::error::{CollectError, Result};
use crate::teacher_forced::{ForcedCost, ForcedEngines, ForcedReferences};

/// hspi's engines: loading on a thread of their own while the endpoint answers the first prompt,
/// then ready (or gone, once their loading failed and said why).
enum Engines {
    Loading(std::thread::JoinHandle<Result<ForcedReferences>>),
    Ready(ForcedReferences),
    Gone,
}

impl Engines {
    /// The engines, once loaded (waiting for them the first time).
    fn ready(&mut self) -> Result<&mut ForcedReferences> {
        if let Engines::Loading(_) = self {
            let Engines::Loading(handle) = std::mem::replace(self, Engines::Gone) else {
                unreachable!("matched above")
            };
            let loaded = handle.join().map_err(|_| {
                CollectError::BadRequest("hspi's reference engines panicked while loading".into())
            })??;
            *self = Engines::Ready(loaded);
        }
        match self {
            Engines::Ready(engines) => Ok(engines),
            _ => Err(CollectError::BadRequest(
                "hspi's reference engines did not load (the first error said why)".into(),
            )),
        }
    }
}

pub struct ForcedSession {
    engines: Engines,
    platforms: Vec<Platform>,
    inputs: HashMap<String, (ProbeInput, usize)>,
    writer: DatasetWriter,
    /// What each answer's references cost, in the order they were computed.
    pub costs: Vec<ForcedCost>,
}

impl ForcedSession {
    /// The `engines` (hspi's for the weights' formats, and the reference servers the user names),
    /// and a dataset at `out` for their answers to `probes`.
    /// `model` is the identity the weights were checked against (it names the dataset's model;
    /// its sha256 keys the requantised formats kept in the cache). The formats and servers are
    /// checked here; the engines load in the background (seconds) while the endpoint answers,
    /// and the first answer's references wait for them.
    pub fn open(
        mut engines: ForcedEngines,
        model: ModelInfo,
        probes: &ProbeSet,
        out: &Path,
        mode: OpenMode,
        command: &str,
    ) -> Result<ForcedSession> {
        let platforms = ForcedReferences::plan(
            &model.id,
            &engines.weights,
            &engines.formats,
            &mut engines.servers,
        )?;
        let (sha, id) = (model.weights_sha256.clone(), model.id.clone());
        let engines = Engines::Loading(std::thread::spawn(move || {
            let ForcedEngines {
                weights,
                formats,
                servers,
                residency,
            } = engines;
            ForcedReferences::open(&id, &weights, &formats, servers, Some(&sha), residency)
        }));
        let manifest = Manifest {
            schema_version: SCHEMA_VERSION,
            created_unix: unix_now(),
            model,
            probe_set: probe_set_info(probes),
            platforms: platforms.clone(),
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
            platforms,
            inputs,
            writer,
            costs: Vec::new(),
        })
    }

    pub fn platforms(&self) -> Vec<Platform> {
        self.platforms.clone()
    }

    /// Every format's answer on `answer`'s tokens, written before they are returned.
    pub fn references(&mut self, answer: &Record) -> Result<Vec<Record>> {
        let Some((input, top)) = self.inputs.get(&answer.probe_id) else {
            return Ok(Vec::new());
        };
        let (records, cost) = self.engines.ready()?.score(input, answer, *top)?;
        self.writer.append(&records)?;
        self.costs.push(cost);
        Ok(records)
    }

    /// Per probe, the prompt tokens a chat request (`chat`) or a completion request bills.
    pub fn prompt_tokens(&mut self, chat: bool) -> Result<BTreeMap<String, u64>> {
        let engines = self.engines.ready()?;
        Ok(self
            .inputs
            .iter()
            .filter_map(|(id, (input, _))| {
                Some((id.clone(), engines.prompt_len(input, chat).ok()? as u64))
            })
            .collect())
    }

    /// Seal the dataset.
    pub fn finish(self) -> Result<()> {
        self.writer.finish()?;
        Ok(())
    }
}
