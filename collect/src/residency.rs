//! Whether a fresh audit's engines stay loaded between answers: every format loaded once and
//! held (the quickest; memory the sum of the formats: 4.5 GB for SmolLM2's 16), or each loaded
//! for each answer from files its first load kept and dropped after it, one format at a time
//! (memory about twice the largest format; each answer pays the reloads).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Residency {
    /// Held where the formats' estimated size fits half the memory this machine has available,
    /// else reloaded per answer.
    #[default]
    Auto,
    Resident,
    PerAnswer,
}

impl Residency {
    pub const ALL: [Residency; 3] = [Residency::Auto, Residency::Resident, Residency::PerAnswer];

    pub fn name(self) -> &'static str {
        match self {
            Residency::Auto => "auto",
            Residency::Resident => "resident",
            Residency::PerAnswer => "per-answer",
        }
    }

    /// Auto decided for engines of `bytes` in all: held where they fit half of `available`
    /// (unknown: held).
    pub fn decide(self, bytes: u64, available: Option<u64>) -> Residency {
        match (self, available) {
            (Residency::Auto, Some(free)) if bytes > free / 2 => Residency::PerAnswer,
            (Residency::Auto, _) => Residency::Resident,
            (chosen, _) => chosen,
        }
    }
}

/// The memory this machine has available now (`MemAvailable`), where the system says.
pub fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

impl fmt::Display for Residency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("unknown residency '{0}' (auto, resident or per-answer)")]
pub struct UnknownResidency(pub String);

impl FromStr for Residency {
    type Err = UnknownResidency;
    fn from_str(s: &str) -> Result<Residency, UnknownResidency> {
        Residency::ALL
            .into_iter()
            .find(|r| r.name() == s)
            .ok_or_else(|| UnknownResidency(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_typos_are_refused() {
        for r in Residency::ALL {
            assert_eq!(r.to_string().parse::<Residency>(), Ok(r));
        }
        assert_eq!(
            "per_answer".parse::<Residency>().unwrap_err().to_string(),
            "unknown residency 'per_answer' (auto, resident or per-answer)"
        );
    }

    #[test]
    fn auto_holds_what_fits_half_the_free_memory() {
        let gb = 1 << 30;
        assert_eq!(
            Residency::Auto.decide(4 * gb, Some(24 * gb)),
            Residency::Resident
        );
        assert_eq!(
            Residency::Auto.decide(13 * gb, Some(24 * gb)),
            Residency::PerAnswer
        );
        assert_eq!(Residency::Auto.decide(13 * gb, None), Residency::Resident);
        assert_eq!(
            Residency::Resident.decide(99 * gb, Some(gb)),
            Residency::Resident
        );
        assert_eq!(
            Residency::PerAnswer.decide(1, Some(99 * gb)),
            Residency::PerAnswer
        );
    }
}
