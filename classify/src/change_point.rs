//! Changes in what a watched provider serves, from its audits round after round (`hspi watch`).
//!
//! Each round's audit decides every claimed dimension or leaves it open; a decided round names a
//! value (the nearest class's field: `f16`, `q4_0 (int4)`). A provider's state on a dimension is
//! the value its decided rounds keep naming. Page's CUSUM counts, in decided rounds, how far the
//! rounds since the state was last confirmed lean to another value (+1 per round naming another
//! value, −1 per round naming the state's, 0 per open round); a change is flagged once that count
//! reaches `rounds_to_flag`, dated at the first round of the run that reached it. So a single open
//! round never flags, a single stray decision never flags, and a provider that switches is
//! flagged `rounds_to_flag` decided rounds after the switch.

use hspi_datasets::Dimension;
use serde::{Deserialize, Serialize};

use crate::dimension_verdict::DimensionStatus;
use crate::error::ClassifyError;

/// One round's audit on one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundEvidence {
    pub round: u32,
    pub status: DimensionStatus,
    /// The value the round's most likely class has on this dimension.
    pub nearest: String,
    /// The round's log-likelihood ratio on this dimension (off the claim against on it).
    pub log_likelihood_ratio: Option<f64>,
}

impl RoundEvidence {
    /// The value a decided round names; open rounds name none.
    fn named(&self) -> Option<&str> {
        matches!(
            self.status,
            DimensionStatus::Consistent | DimensionStatus::Mismatch
        )
        .then_some(self.nearest.as_str())
    }
}

/// Checked parameters of the change test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ChangeParams {
    rounds_to_flag: u32,
}

impl ChangeParams {
    /// `rounds_to_flag`: net decided rounds for another value before a change is flagged (≥ 2:
    /// one round alone is never a change).
    pub fn new(rounds_to_flag: u32) -> Result<ChangeParams, ClassifyError> {
        if rounds_to_flag < 2 {
            return Err(ClassifyError::Param(format!(
                "a change needs at least 2 decided rounds, not {rounds_to_flag}"
            )));
        }
        Ok(ChangeParams { rounds_to_flag })
    }

    pub fn rounds_to_flag(&self) -> u32 {
        self.rounds_to_flag
    }
}

impl Default for ChangeParams {
    fn default() -> Self {
        ChangeParams { rounds_to_flag: 2 }
    }
}

/// A change of a provider's state on one dimension.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub dimension: Dimension,
    /// The state before (None: the first state established).
    pub from: Option<String>,
    pub to: String,
    /// The first round of the new state.
    pub since_round: u32,
    /// The round whose audit made the evidence suffice.
    pub flagged_at_round: u32,
    /// The rounds from `since_round` to `flagged_at_round`, as the evidence.
    pub evidence: Vec<RoundEvidence>,
}

impl Change {
    /// False for the first state established (nothing changed: it is where watching began).
    pub fn is_change(&self) -> bool {
        self.from.is_some()
    }
}

/// The states of one dimension over `rounds` (in round order): the first state established,
/// then every change. An empty list: no state yet (too few decided rounds).
pub fn state_changes(
    dimension: Dimension,
    rounds: &[RoundEvidence],
    params: ChangeParams,
) -> Vec<Change> {
    let need = i64::from(params.rounds_to_flag);
    let mut changes: Vec<Change> = Vec::new();
    let mut state: Option<String> = None;
    // The CUSUM per candidate value, and where each run began (index into `rounds`).
    let mut runs: Vec<(String, i64, usize)> = Vec::new();
    for (i, r) in rounds.iter().enumerate() {
        let Some(named) = r.named() else {
            continue;
        };
        if state.as_deref() == Some(named) {
            // A round confirming the state weighs against every candidate.
            for run in &mut runs {
                run.1 -= 1;
            }
            runs.retain(|run| run.1 > 0);
            continue;
        }
        match runs.iter_mut().find(|run| run.0 == named) {
            Some(run) => run.1 += 1,
            None => runs.push((named.to_string(), 1, i)),
        }
        // Rounds naming a third value weigh against this candidate too.
        for run in runs.iter_mut().filter(|run| run.0 != named) {
            run.1 -= 1;
        }
        runs.retain(|run| run.1 > 0 || run.0 == named);
        let Some(&(ref to, count, start)) = runs.iter().find(|run| run.0 == named) else {
            continue;
        };
        if count >= need {
            changes.push(Change {
                dimension,
                from: state.clone(),
                to: to.clone(),
                since_round: rounds[start].round,
                flagged_at_round: r.round,
                evidence: rounds[start..=i].to_vec(),
            });
            state = Some(to.clone());
            runs.clear();
        }
    }
    changes
}

/// Where a dimension stands after `rounds` whose states are `states`: the status the established
/// state was last decided with (consistent or mismatch); with no state yet, unknown when the
/// latest round found an unknown platform, else inconclusive.
pub fn standing(rounds: &[RoundEvidence], states: &[Change]) -> DimensionStatus {
    match states.last() {
        Some(state) => rounds
            .iter()
            .rev()
            .find(|r| r.named() == Some(state.to.as_str()))
            .map_or(DimensionStatus::Inconclusive, |r| r.status),
        None => match rounds.last() {
            Some(r) if r.status == DimensionStatus::Unknown => DimensionStatus::Unknown,
            _ => DimensionStatus::Inconclusive,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(round: u32, status: DimensionStatus, nearest: &str) -> RoundEvidence {
        RoundEvidence {
            round,
            status,
            nearest: nearest.into(),
            log_likelihood_ratio: None,
        }
    }

    /// Rounds 1..: `c` consistent f16, `m` mismatch q4_0, `8` mismatch q8_0, `?` inconclusive.
    fn rounds(pattern: &str) -> Vec<RoundEvidence> {
        pattern
            .chars()
            .zip(1..)
            .map(|(c, i)| match c {
                'c' => round(i, DimensionStatus::Consistent, "f16"),
                'm' => round(i, DimensionStatus::Mismatch, "q4_0 (int4)"),
                '8' => round(i, DimensionStatus::Mismatch, "q8_0 (int8)"),
                _ => round(i, DimensionStatus::Inconclusive, "f16"),
            })
            .collect()
    }

    fn changes(pattern: &str) -> Vec<(Option<String>, String, u32, u32)> {
        state_changes(Dimension::Format, &rounds(pattern), ChangeParams::default())
            .into_iter()
            .map(|c| (c.from, c.to, c.since_round, c.flagged_at_round))
            .collect()
    }

    #[test]
    fn a_steady_provider_has_one_state_and_no_change() {
        assert_eq!(changes("cccccccccc"), [(None, "f16".into(), 1, 2)]);
        let steady = state_changes(Dimension::Format, &rounds("ccc"), ChangeParams::default());
        assert!(!steady[0].is_change());
        // Served Q8_0 throughout: a mismatch every round, but no change.
        assert_eq!(changes("8888888888"), [(None, "q8_0 (int8)".into(), 1, 2)]);
    }

    #[test]
    fn a_switch_is_flagged_at_the_round_it_happened() {
        let c = changes("ccccccccccmmmmm");
        assert_eq!(c.len(), 2, "{c:?}");
        assert_eq!(
            c[1],
            (Some("f16".into()), "q4_0 (int4)".into(), 11, 12),
            "within 2 rounds, dated round 11"
        );
    }

    #[test]
    fn open_rounds_and_single_stray_decisions_are_not_changes() {
        assert_eq!(changes("ccc??cc?cc").len(), 1);
        assert_eq!(changes("cccmccc8cc").len(), 1, "strays that do not persist");
        // An open round inside the new state delays the flag but not the date.
        let c = changes("ccccm?mm");
        assert_eq!(c[1].2, 5);
        assert_eq!(c[1].3, 7);
    }

    #[test]
    fn parameters_below_two_rounds_are_refused() {
        assert!(ChangeParams::new(1).is_err());
        assert_eq!(ChangeParams::new(3).unwrap().rounds_to_flag(), 3);
    }

    #[test]
    fn standing_follows_the_established_state_not_the_last_round() {
        let stand = |pattern: &str| {
            let r = rounds(pattern);
            standing(
                &r,
                &state_changes(Dimension::Format, &r, ChangeParams::default()),
            )
        };
        assert_eq!(stand("cccc?"), DimensionStatus::Consistent);
        assert_eq!(stand("ccccmm"), DimensionStatus::Mismatch);
        assert_eq!(stand("ccccm"), DimensionStatus::Consistent, "one stray");
        assert_eq!(stand("c??"), DimensionStatus::Inconclusive, "no state yet");
        let unknown = [round(1, DimensionStatus::Unknown, "f16")];
        assert_eq!(standing(&unknown, &[]), DimensionStatus::Unknown);
    }
}
