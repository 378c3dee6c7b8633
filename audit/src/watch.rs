//! Watching providers over rounds (`hspi watch`): every round audits every provider in a random
//! order, at jittered times, appending each outcome to the durable log as it ends; a rerun skips
//! what the log holds. Findings (each provider's state and changes per dimension) are computed
//! from the log alone, so `--replay` re-applies today's statistics to past rounds.
//!
//! The auditor and the clock are traits, so the loop runs under test without endpoints or waits.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hspi_classify::change_point::{state_changes, Change, ChangeParams, RoundEvidence};
use hspi_datasets::manifest::unix_now;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use crate::error::AuditError;
use crate::watch_log::{RoundOutcome, RoundRecord, WatchLog};

/// One watched provider: a name for the reports, its endpoint and what it claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchProvider {
    pub name: String,
    pub url: String,
    pub claim: String,
    /// The environment variable holding its API key, if it needs one.
    pub api_key_env: Option<String>,
}

impl WatchProvider {
    /// `NAME=URL[,claim=SPEC][,api-key-env=VAR]` (`--provider`); `claim` defaults to
    /// `default_claim` (`--claim`).
    pub fn parse(spec: &str, default_claim: Option<&str>) -> Result<WatchProvider, AuditError> {
        let bad = |why: &str| AuditError::BadProvider {
            spec: spec.to_string(),
            why: why.to_string(),
        };
        let (name, rest) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
        let mut parts = rest.split(',');
        let url = parts.next().unwrap_or_default();
        if name.is_empty() || url.is_empty() {
            return Err(bad("the name and the URL must not be empty"));
        }
        let starts_well = name.starts_with(|c: char| c.is_ascii_alphanumeric());
        if !starts_well
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(bad(
                "a name is a letter or digit, then letters, digits, '-', '_' or '.' (it names directories)",
            ));
        }
        let mut claim = default_claim.map(str::to_string);
        let mut api_key_env = None;
        for part in parts {
            match part.split_once('=') {
                Some(("claim", v)) => claim = Some(v.to_string()),
                Some(("api-key-env", v)) => api_key_env = Some(v.to_string()),
                _ => return Err(bad(&format!("unknown option '{part}'"))),
            }
        }
        let claim = claim.ok_or_else(|| bad("no claim: add ,claim=SPEC or give --claim"))?;
        // Refuse a claim that does not parse now, not at the first round.
        claim.parse::<hspi_datasets::PlatformPattern>()?;
        Ok(WatchProvider {
            name: name.into(),
            url: url.into(),
            claim,
            api_key_env,
        })
    }
}

/// A pause between rounds: `90s`, `30m`, `2h`, `1d` (a bare number is seconds).
pub fn parse_every(text: &str) -> Result<Duration, AuditError> {
    let t = text.trim();
    let (number, unit) = t.split_at(t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len()));
    let scale = match unit {
        "" | "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => f64::NAN,
    };
    match number.parse::<f64>() {
        Ok(n) if n >= 0.0 && scale.is_finite() => Ok(Duration::from_secs_f64(n * scale)),
        _ => Err(AuditError::BadPause {
            text: text.to_string(),
        }),
    }
}

/// Runs one audit of one provider, writing its answers and report under `out`.
pub trait RoundAuditor {
    fn audit(
        &mut self,
        provider: &WatchProvider,
        round: u32,
        out: &Path,
    ) -> Result<RoundOutcome, AuditError>;
}

/// Waits between rounds (a real sleep, or nothing under test).
pub trait Clock {
    fn sleep(&mut self, d: Duration);
}

pub struct SystemClock;

impl Clock for SystemClock {
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d)
    }
}

/// Checked parameters of a watch, kept in `DIR/watch.json` so a rerun resumes the same watch
/// (same providers, same seed: the same draws and orders) and reports know the claims.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchPlan {
    providers: Vec<WatchProvider>,
    rounds: u32,
    every: Duration,
    /// Each wait is `every` times a factor drawn in [1 − jitter, 1 + jitter].
    jitter: f64,
    seed: u64,
}

impl WatchPlan {
    pub fn new(
        providers: Vec<WatchProvider>,
        rounds: u32,
        every: Duration,
        jitter: f64,
        seed: u64,
    ) -> Result<WatchPlan, AuditError> {
        if providers.is_empty() {
            return Err(AuditError::NoProviders);
        }
        let mut names: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(AuditError::ProviderTwice {
                name: w[0].to_string(),
            });
        }
        if rounds == 0 || !(0.0..1.0).contains(&jitter) {
            return Err(AuditError::BadRounds { rounds, jitter });
        }
        Ok(WatchPlan {
            providers,
            rounds,
            every,
            jitter,
            seed,
        })
    }
}

impl WatchPlan {
    pub const FILE: &'static str = "watch.json";

    pub fn providers(&self) -> &[WatchProvider] {
        &self.providers
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The plan a watch in `dir` runs under. A new watch records `self`; an existing one keeps
    /// its seed (so its draws and orders continue) and may change its rounds and pace, but not
    /// its providers: another list is refused, naming both.
    pub fn settle(self, dir: &Path) -> Result<WatchPlan, AuditError> {
        let path = dir.join(Self::FILE);
        let plan = match std::fs::read_to_string(&path) {
            Ok(text) => {
                let old: WatchPlan =
                    serde_json::from_str(&text).map_err(|e| AuditError::NotAWatchPlan {
                        path: path.display().to_string(),
                        why: e.to_string(),
                    })?;
                if old.providers != self.providers {
                    let names = |p: &[WatchProvider]| {
                        p.iter()
                            .map(|p| format!("{}={},claim={}", p.name, p.url, p.claim))
                            .collect::<Vec<_>>()
                            .join(" ")
                    };
                    return Err(AuditError::WatchProvidersDiffer {
                        dir: dir.display().to_string(),
                        old: names(&old.providers),
                        new: names(&self.providers),
                    });
                }
                WatchPlan {
                    seed: old.seed,
                    ..self
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => self,
            Err(e) => return Err(AuditError::io(&path)(e)),
        };
        std::fs::create_dir_all(dir).map_err(AuditError::io(dir))?;
        let text = serde_json::to_string_pretty(&plan).expect("a watch plan serialises");
        std::fs::write(&path, text).map_err(AuditError::io(&path))?;
        Ok(plan)
    }

    /// The plan recorded in `dir`.
    pub fn load(dir: &Path) -> Result<WatchPlan, AuditError> {
        let path = dir.join(Self::FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| AuditError::NotAWatchDir {
            path: path.display().to_string(),
            dir: dir.display().to_string(),
            why: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| AuditError::NotAWatchPlan {
            path: path.display().to_string(),
            why: e.to_string(),
        })
    }

    /// The seed of round `round`'s draw for `provider`: fixed by the watch's seed, so a resumed
    /// audit asks what the interrupted one asked (and its answers come back from the journal).
    pub fn draw_seed(&self, round: u32, provider: &str) -> u64 {
        // FNV-1a over the name, mixed with the round and the watch's seed.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in provider.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h ^ self.seed.rotate_left(17) ^ u64::from(round).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
}

/// Where round `round`'s audit of `provider` keeps its answers and report.
pub fn round_dir(dir: &Path, round: u32, provider: &str) -> PathBuf {
    dir.join(format!("round-{round:04}")).join(provider)
}

/// Run the watch in `dir`, resuming from its log; `on_round` sees each outcome as it is logged.
pub fn run_watch(
    plan: &WatchPlan,
    dir: &Path,
    auditor: &mut dyn RoundAuditor,
    clock: &mut dyn Clock,
    on_round: &mut dyn FnMut(&RoundRecord),
) -> Result<Vec<RoundRecord>, AuditError> {
    let mut log = WatchLog::open(dir)?;
    let mut records = log.records()?;
    for round in 1..=plan.rounds {
        let mut rng = ChaCha8Rng::seed_from_u64(plan.seed ^ u64::from(round));
        let mut order: Vec<&WatchProvider> = plan.providers.iter().collect();
        order.shuffle(&mut rng);
        let mut audited = false;
        for provider in order {
            if records
                .iter()
                .any(|r| r.round == round && r.provider == provider.name)
            {
                continue;
            }
            let out = round_dir(dir, round, &provider.name);
            let started_unix = unix_now();
            let clock_started = std::time::Instant::now();
            let outcome = auditor.audit(provider, round, &out)?;
            let record = RoundRecord {
                round,
                provider: provider.name.clone(),
                started_unix,
                seconds: clock_started.elapsed().as_secs_f64(),
                out,
                outcome,
            };
            log.append(&record)?;
            on_round(&record);
            records.push(record);
            audited = true;
        }
        if audited && round < plan.rounds {
            let factor = 1.0 + plan.jitter * (2.0 * rng.random::<f64>() - 1.0);
            clock.sleep(plan.every.mul_f64(factor));
        }
    }
    Ok(records)
}

/// Each provider's states and changes per dimension, from the logged rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProviderFindings {
    pub provider: String,
    pub rounds: usize,
    /// The first state established on each dimension, then each change (`Change::is_change`).
    pub states: Vec<Change>,
}

impl ProviderFindings {
    pub fn changes(&self) -> impl Iterator<Item = &Change> {
        self.states.iter().filter(|c| c.is_change())
    }
}

pub fn findings(records: &[RoundRecord], params: ChangeParams) -> Vec<ProviderFindings> {
    let mut by_provider: BTreeMap<&str, Vec<&RoundRecord>> = BTreeMap::new();
    for r in records {
        by_provider.entry(&r.provider).or_default().push(r);
    }
    by_provider
        .into_iter()
        .map(|(provider, mut rounds)| {
            rounds.sort_by_key(|r| r.round);
            let mut per_dimension: BTreeMap<_, Vec<RoundEvidence>> = BTreeMap::new();
            for r in &rounds {
                for d in &r.outcome.dimensions {
                    per_dimension
                        .entry(d.dimension)
                        .or_default()
                        .push(RoundEvidence {
                            round: r.round,
                            status: d.status,
                            nearest: d.nearest.clone(),
                            log_likelihood_ratio: d.log_likelihood_ratio,
                        });
                }
            }
            ProviderFindings {
                provider: provider.to_string(),
                rounds: rounds.len(),
                states: per_dimension
                    .into_iter()
                    .flat_map(|(d, ev)| state_changes(d, &ev, params))
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use hspi_classify::dimension_verdict::{DimensionStatus, DimensionVerdict};
    use hspi_datasets::Dimension;

    use super::*;

    fn provider(name: &str) -> WatchProvider {
        WatchProvider {
            name: name.into(),
            url: format!("http://{name}.invalid/v1/chat/completions"),
            claim: "*/*/f16/*".into(),
            api_key_env: None,
        }
    }

    /// A serves F16 throughout, B Q8_0 throughout, C F16 until round 10 and Q4_0 after;
    /// every fourth audit of C before the switch is inconclusive. Fails once, if asked, to
    /// stand for a kill.
    struct Mock {
        fail_at: Option<(u32, String)>,
        audits: usize,
    }

    impl RoundAuditor for Mock {
        fn audit(
            &mut self,
            p: &WatchProvider,
            round: u32,
            _out: &Path,
        ) -> Result<RoundOutcome, AuditError> {
            if self.fail_at.as_ref() == Some(&(round, p.name.clone())) {
                self.fail_at = None;
                return Err(AuditError::Io {
                    path: "round".into(),
                    source: std::io::Error::other("killed"),
                });
            }
            self.audits += 1;
            let (status, nearest) = match (p.name.as_str(), round) {
                ("B", _) => (DimensionStatus::Mismatch, "q8_0 (int8)"),
                ("C", r) if r > 10 => (DimensionStatus::Mismatch, "q4_0 (int4)"),
                ("C", r) if r % 4 == 0 => (DimensionStatus::Inconclusive, "f16"),
                _ => (DimensionStatus::Consistent, "f16"),
            };
            Ok(RoundOutcome {
                verdict: status.name().into(),
                dimensions: vec![DimensionVerdict {
                    dimension: Dimension::Format,
                    claimed: "f16".into(),
                    status,
                    nearest: nearest.into(),
                    log_likelihood_ratio: Some(0.0),
                    note: None,
                    unseen: false,
                }],
                contract_failures: Vec::new(),
                requests: 3,
                output_tokens: 24,
                cost: 0.0,
                error: None,
            })
        }
    }

    struct Waits(Vec<Duration>);

    impl Clock for Waits {
        fn sleep(&mut self, d: Duration) {
            self.0.push(d)
        }
    }

    fn plan() -> WatchPlan {
        let providers = ["A", "B", "C"].map(provider).to_vec();
        WatchPlan::new(providers, 30, Duration::from_secs(1800), 0.2, 7).unwrap()
    }

    #[test]
    fn a_switch_is_flagged_at_its_round_and_steady_providers_never() {
        let tmp = tempfile::tempdir().unwrap();
        let mut mock = Mock {
            fail_at: None,
            audits: 0,
        };
        let mut waits = Waits(Vec::new());
        let records = run_watch(&plan(), tmp.path(), &mut mock, &mut waits, &mut |_| {}).unwrap();
        assert_eq!(records.len(), 90);
        assert_eq!(waits.0.len(), 29, "no wait after the last round");
        assert!(waits.0.iter().all(|w| (1440..=2160).contains(&w.as_secs())));
        assert!(waits.0.windows(2).any(|w| w[0] != w[1]), "jittered");
        let f = findings(&records, ChangeParams::default());
        let changes = |name: &str| -> Vec<(u32, u32)> {
            f.iter()
                .find(|p| p.provider == name)
                .unwrap()
                .changes()
                .map(|c| (c.since_round, c.flagged_at_round))
                .collect()
        };
        assert_eq!(changes("A"), []);
        assert_eq!(changes("B"), []);
        assert_eq!(changes("C"), [(11, 12)]);
        // Providers are asked in more than one order.
        let firsts: std::collections::BTreeSet<&str> = (1..=30)
            .map(|round| {
                records
                    .iter()
                    .find(|r| r.round == round)
                    .unwrap()
                    .provider
                    .as_str()
            })
            .collect();
        assert!(firsts.len() > 1);
    }

    #[test]
    fn a_watch_stopped_mid_round_resumes_to_the_same_history() {
        let tmp = tempfile::tempdir().unwrap();
        let mut waits = Waits(Vec::new());
        let mut killed = Mock {
            fail_at: Some((7, "B".into())),
            audits: 0,
        };
        assert!(run_watch(&plan(), tmp.path(), &mut killed, &mut waits, &mut |_| {}).is_err());
        let mut resumed = Mock {
            fail_at: None,
            audits: 0,
        };
        let again = run_watch(&plan(), tmp.path(), &mut resumed, &mut waits, &mut |_| {}).unwrap();
        assert_eq!(
            killed.audits + resumed.audits,
            90,
            "nothing audited twice or lost"
        );
        let whole = tempfile::tempdir().unwrap();
        let mut once = Mock {
            fail_at: None,
            audits: 0,
        };
        let reference =
            run_watch(&plan(), whole.path(), &mut once, &mut waits, &mut |_| {}).unwrap();
        let key = |r: &RoundRecord| (r.round, r.provider.clone(), r.outcome.clone());
        let mut a: Vec<_> = again.iter().map(key).collect();
        let mut b: Vec<_> = reference.iter().map(key).collect();
        a.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
        b.sort_by(|x, y| (x.0, &x.1).cmp(&(y.0, &y.1)));
        assert_eq!(a, b);
        assert_eq!(
            findings(&again, ChangeParams::default()),
            findings(&reference, ChangeParams::default())
        );
    }

    #[test]
    fn provider_specs_parse_and_bad_ones_are_named() {
        let p = WatchProvider::parse(
            "acme=https://api.acme.example/v1/chat/completions,claim=*/*/f16/*,api-key-env=ACME_KEY",
            None,
        )
        .unwrap();
        assert_eq!(p.name, "acme");
        assert_eq!(p.url, "https://api.acme.example/v1/chat/completions");
        assert_eq!(p.claim, "*/*/f16/*");
        assert_eq!(p.api_key_env.as_deref(), Some("ACME_KEY"));
        let d = WatchProvider::parse("b=http://x/v1/completions", Some("*/*/q8_0/*")).unwrap();
        assert_eq!(d.claim, "*/*/q8_0/*");
        for (spec, why) in [
            ("noequals", "no '='"),
            ("a=http://x,colour=red", "unknown option 'colour=red'"),
            ("a=http://x", "no claim"),
            ("a/b=http://x,claim=*/*/f16/*", "a name is"),
            ("..=http://x,claim=*/*/f16/*", "a name is"),
        ] {
            let err = WatchProvider::parse(spec, None).unwrap_err().to_string();
            assert!(err.contains(why), "{spec}: {err}");
        }
        assert!(WatchProvider::parse("a=http://x,claim=not a claim", None).is_err());
    }

    #[test]
    fn pauses_parse_with_their_units() {
        assert_eq!(parse_every("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_every("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_every("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_every("1.5s").unwrap(), Duration::from_millis(1500));
        for bad in ["", "ten", "5w", "-3m"] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn plans_without_providers_or_with_a_name_twice_are_refused() {
        let d = Duration::from_secs(60);
        assert!(WatchPlan::new(Vec::new(), 3, d, 0.1, 1).is_err());
        let twice = vec![provider("A"), provider("A")];
        let err = WatchPlan::new(twice, 3, d, 0.1, 1).unwrap_err().to_string();
        assert!(err.contains("named twice"), "{err}");
        assert!(WatchPlan::new(vec![provider("A")], 0, d, 0.1, 1).is_err());
    }
}
