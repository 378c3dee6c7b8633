//! A claim about the serving platform: the platform string's fields, any of them left open
//! with `*` (`*/llamacpp/f16/*`); a field matches a platform's field exactly or up to its
//! version or variant suffix (`llamacpp` matches `llamacpp-11434`, `cpu` matches `cpu-avx2`).

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    hardware: Option<String>,
    engine: Option<String>,
    format: Option<String>,
    kernel: Option<String>,
    batch: Option<String>,
}

impl FromStr for Claim {
    type Err = String;
    fn from_str(s: &str) -> Result<Claim, String> {
        let parts: Vec<&str> = s.split('/').collect();
        let open = |p: &str| (p != "*" && !p.is_empty()).then(|| p.to_string());
        let (hardware, engine, format, kernel, batch) = match parts.as_slice() {
            [h, e, f, b] => (open(h), open(e), open(f), None, open(b)),
            [h, e, f, k, b] => (open(h), open(e), open(f), open(k), open(b)),
            _ => {
                return Err(format!(
                    "claim '{s}' is not HARDWARE/ENGINE/FORMAT[/KERNEL]/bsN (use * for a part left open, e.g. */llamacpp/f16/*)"
                ))
            }
        };
        Ok(Claim {
            hardware,
            engine,
            format,
            kernel,
            batch,
        })
    }
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = |x: &Option<String>| x.clone().unwrap_or_else(|| "*".into());
        match &self.kernel {
            Some(_) => write!(
                f,
                "{}/{}/{}/{}/{}",
                p(&self.hardware),
                p(&self.engine),
                p(&self.format),
                p(&self.kernel),
                p(&self.batch)
            ),
            None => write!(
                f,
                "{}/{}/{}/{}",
                p(&self.hardware),
                p(&self.engine),
                p(&self.format),
                p(&self.batch)
            ),
        }
    }
}

fn field_matches(claim: &Option<String>, actual: Option<&str>) -> bool {
    match (claim, actual) {
        (None, _) => true,
        (Some(c), Some(a)) => {
            a == c
                || a.strip_prefix(c.as_str())
                    .is_some_and(|rest| rest.starts_with('-'))
        }
        (Some(_), None) => false,
    }
}

impl Claim {
    /// Whether a platform (its string form) satisfies the claim.
    pub fn matches(&self, platform: &str) -> bool {
        let parts: Vec<&str> = platform.split('/').collect();
        let (h, e, f, k, b) = match parts.as_slice() {
            [h, e, f, b] => (*h, *e, *f, None, *b),
            [h, e, f, k, b] => (*h, *e, *f, Some(*k), *b),
            _ => return false,
        };
        field_matches(&self.hardware, Some(h))
            && field_matches(&self.engine, Some(e))
            && field_matches(&self.format, Some(f))
            && field_matches(&self.kernel, k)
            && field_matches(&self.batch, Some(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_parts_and_version_suffixes() {
        let c: Claim = "*/llamacpp/f16/*".parse().unwrap();
        assert!(c.matches("cpu-avx2/llamacpp-11434/f16/bs1"));
        assert!(!c.matches("cpu-avx2/llamacpp-11434/q8_0/bs1"));
        assert!(!c.matches("cpu-avx2/llamacppx/f16/bs1"));
        let c: Claim = "cpu/*/bf16/*".parse().unwrap();
        assert!(c.matches("cpu-avx2/emu/bf16/acc-f32.seq.sk1.fma/bs1"));
        assert_eq!(c.to_string(), "cpu/*/bf16/*");
        assert!("f16"
            .parse::<Claim>()
            .unwrap_err()
            .contains("HARDWARE/ENGINE/FORMAT"));
    }
}
