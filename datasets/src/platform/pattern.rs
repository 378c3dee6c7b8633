//! A platform pattern: what a provider claims to serve. Each field of the platform string is a
//! [`Dimension`]; any may be left open with `*` (`*/llamacpp/f16/*`), and a given field matches a
//! platform's field exactly or up to its version or variant suffix (`llamacpp` matches
//! `llamacpp-11434`, `cpu` matches `cpu-avx2`). A verdict can so name the dimension that fails.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::error::{split_fields, PatternParseError};
use super::{Dimension, EngineKind, FormatFamily, NumericFormat, Platform};

/// A claim about the serving platform, one optional field per dimension (in [`Dimension::ALL`]
/// order); `None` is a field left open.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PlatformPattern {
    fields: [Option<String>; 5],
}

impl PlatformPattern {
    /// The claimed value of one dimension (`None`: left open).
    pub fn get(&self, d: Dimension) -> Option<&str> {
        self.fields.get(d as usize).and_then(|f| f.as_deref())
    }

    /// The dimensions this pattern names.
    pub fn claimed(&self) -> Vec<Dimension> {
        Dimension::ALL
            .into_iter()
            .filter(|d| self.get(*d).is_some())
            .collect()
    }

    /// The same claim with the given dimensions left open.
    pub fn opened(&self, dims: &[Dimension]) -> PlatformPattern {
        let mut fields = self.fields.clone();
        for d in dims {
            if let Some(f) = fields.get_mut(*d as usize) {
                *f = None;
            }
        }
        PlatformPattern { fields }
    }

    /// The claimed format family, when the format is written as providers write it (`int8`
    /// covers GGUF `q8_0`).
    pub fn format_family(&self) -> Option<FormatFamily> {
        self.get(Dimension::Format)?.parse().ok()
    }

    /// Whether `platform` satisfies the pattern on one dimension.
    pub fn matches_dimension(&self, d: Dimension, platform: &Platform) -> bool {
        if d == Dimension::Format {
            if let Some(family) = self.format_family() {
                return family.covers(platform.format);
            }
        }
        match (self.get(d), d.field(platform)) {
            (None, _) => true,
            (Some(c), Some(a)) => {
                a == c || a.strip_prefix(c).is_some_and(|rest| rest.starts_with('-'))
            }
            (Some(_), None) => false,
        }
    }

    pub fn matches(&self, platform: &Platform) -> bool {
        Dimension::ALL
            .into_iter()
            .all(|d| self.matches_dimension(d, platform))
    }

    /// The claimed dimensions on which `platform` differs from the pattern.
    pub fn mismatched(&self, platform: &Platform) -> Vec<Dimension> {
        Dimension::ALL
            .into_iter()
            .filter(|d| !self.matches_dimension(*d, platform))
            .collect()
    }
}

impl FromStr for PlatformPattern {
    type Err = PatternParseError;
    fn from_str(s: &str) -> Result<PlatformPattern, PatternParseError> {
        let err = |reason: String| PatternParseError {
            input: s.to_string(),
            reason,
        };
        let parts = split_fields(s).map_err(|e| err(e.to_string()))?;
        let open = |p: Option<&str>| p.filter(|p| *p != "*" && !p.is_empty()).map(String::from);
        let fields = parts.map(open);
        let pattern = PlatformPattern { fields };
        // Fields with a closed vocabulary are checked, so a typo is an error, not a claim that
        // matches nothing.
        if let Some(f) = pattern.get(Dimension::Format) {
            if f.parse::<FormatFamily>().is_err() {
                f.parse::<NumericFormat>().map_err(|e| {
                    let families: Vec<&str> = FormatFamily::ALL.iter().map(|f| f.name()).collect();
                    err(format!(
                        "{} (or a family: {})",
                        e.reason,
                        families.join(", ")
                    ))
                })?;
            }
        }
        if let Some(e) = pattern.get(Dimension::Engine) {
            let kind = e.split('-').next().unwrap_or(e);
            if !EngineKind::ALL.iter().any(|k| k.as_str() == kind) {
                return Err(err(format!("unknown engine '{kind}'")));
            }
        }
        if let Some(b) = pattern.get(Dimension::Batch) {
            if !b
                .strip_prefix("bs")
                .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n > 0))
            {
                return Err(err(format!(
                    "batch size '{b}' is not of the form bsN (N ≥ 1) or *"
                )));
            }
        }
        Ok(pattern)
    }
}

impl fmt::Display for PlatformPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let field = |d: Dimension| self.get(d).unwrap_or("*");
        let shown: Vec<&str> = Dimension::ALL
            .into_iter()
            // The kernel field is written only when the pattern names one.
            .filter(|d| *d != Dimension::Kernel || self.get(*d).is_some())
            .map(field)
            .collect();
        f.write_str(&shown.join("/"))
    }
}

impl Serialize for PlatformPattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for PlatformPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Platform {
        s.parse().unwrap()
    }

    #[test]
    fn open_parts_and_version_suffixes() {
        let c: PlatformPattern = "*/llamacpp/f16/*".parse().unwrap();
        assert!(c.matches(&p("cpu-avx2/llamacpp-11434/f16/bs1")));
        assert!(!c.matches(&p("cpu-avx2/llamacpp-11434/q8_0/bs1")));
        assert!(!c.matches(&p("cpu-avx2/emu/f16/acc-f32.seq.sk1.fma/bs1")));
        let c: PlatformPattern = "cpu/*/bf16/*".parse().unwrap();
        assert!(c.matches(&p("cpu-avx2/emu/bf16/acc-f32.seq.sk1.fma/bs1")));
        assert_eq!(c.to_string(), "cpu/*/bf16/*");
        assert_eq!(c.claimed(), vec![Dimension::Hardware, Dimension::Format]);
        let e = "f16".parse::<PlatformPattern>().unwrap_err().to_string();
        assert!(e.contains("HARDWARE/ENGINE/FORMAT"), "{e}");
    }

    #[test]
    fn a_mismatch_names_its_dimensions() {
        let c: PlatformPattern = "cpu-avx2/llamacpp/f16/bs1".parse().unwrap();
        let served = p("cpu-avx512/llamacpp-11434/q8_0/bs1");
        assert_eq!(
            c.mismatched(&served),
            vec![Dimension::Hardware, Dimension::Format]
        );
        assert!(c.mismatched(&p("cpu-avx2/llamacpp-1/f16/bs1")).is_empty());
    }

    #[test]
    fn formats_written_as_providers_write_them_cover_their_family() {
        let int8: PlatformPattern = "*/*/int8/*".parse().unwrap();
        assert!(int8.matches(&p("cpu-avx2/llamacpp-11434/q8_0/bs1")));
        assert!(int8.matches(&p("cpu-avx2/emu/int8/acc-f32.seq.sk1.fma/bs1")));
        assert!(!int8.matches(&p("cpu-avx2/llamacpp-11434/f16/bs1")));
        assert_eq!(int8.format_family(), Some(FormatFamily::Int8));
        let int4: PlatformPattern = "*/llamacpp/int4/*".parse().unwrap();
        assert!(int4.matches(&p("cpu-avx2/llamacpp-11434/q4_0/bs1")));
        let fp16: PlatformPattern = "*/*/fp16/*".parse().unwrap();
        assert!(fp16.matches(&p("cpu-avx2/llamacpp-11434/f16/bs1")));
        assert_eq!(
            fp16.mismatched(&p("cpu-avx2/llamacpp-11434/q8_0/bs1")),
            vec![Dimension::Format]
        );
        assert!("*/*/mxfp4/*".parse::<PlatformPattern>().is_ok());
        let opened = "cpu-avx512/llamacpp/int8/*"
            .parse::<PlatformPattern>()
            .unwrap();
        assert_eq!(
            opened.opened(&[Dimension::Hardware]).to_string(),
            "*/llamacpp/int8/*"
        );
        let exact: PlatformPattern = "*/*/q8_0/*".parse().unwrap();
        assert_eq!(exact.format_family(), None);
    }

    #[test]
    fn typos_in_closed_fields_are_errors() {
        for (bad, needle) in [
            ("*/llamacpp/f17/*", "unknown numeric format 'f17'"),
            ("*/torch/f16/*", "unknown engine 'torch'"),
            ("*/*/f16/b4", "batch size 'b4'"),
        ] {
            let e = bad.parse::<PlatformPattern>().unwrap_err().to_string();
            assert!(e.contains(needle), "{bad}: {e}");
        }
    }

    #[test]
    fn display_and_parse_round_trip() {
        for s in [
            "*/*/*/*",
            "cpu-avx2/candle/f32/bs1",
            "*/cublas/f16/acc-f16/*",
            "remote-x/*/q4_0/*",
        ] {
            let c: PlatformPattern = s.parse().unwrap();
            assert_eq!(c.to_string(), s);
            assert_eq!(c.to_string().parse::<PlatformPattern>().unwrap(), c);
        }
    }
}
