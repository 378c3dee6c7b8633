//! The API contract an audit checks beside the claim, one line each with its evidence: billing
//! (`usage` against the pack's token counts), parameters honoured (temperature-0 repeats,
//! top_logprobs, max_tokens), and transport failures counted apart from the verdict. Also which
//! prompts the audit drew from its pack's pool.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// Every answer checked kept the contract.
    Pass,
    /// At least one answer broke it: the evidence says which and by how much.
    Fail,
    /// Nothing to check it with (no `usage`, no logprobs, no counts in the pack).
    Unchecked,
}

impl CheckStatus {
    pub fn name(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "FAIL",
            CheckStatus::Unchecked => "not checked",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContractCheck {
    /// `billing`, `parameters` or `transport`.
    pub name: String,
    pub status: CheckStatus,
    /// One sentence with the figures.
    pub detail: String,
    /// Per answer or per parameter, what was seen (at most a handful).
    #[serde(default)]
    pub evidence: Vec<String>,
}

/// The pool prompts one audit asked: drawn at random per audit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackDraw {
    /// `NAME@ID` of the pack.
    pub pack: String,
    pub pool: usize,
    pub drawn: usize,
    pub seed: u64,
    /// The drawn prompts' ids.
    pub probes: Vec<String>,
    /// Prompts made for this audit alone (`hspi audit --weights`), not drawn from the pool: how
    /// many the generator could have made (`about 10^30`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_space: Option<String>,
}

impl PackDraw {
    pub fn sentence(&self) -> String {
        if let Some(space) = &self.fresh_space {
            return format!(
                "{} prompts made for this audit alone (seed {}) from {space} possible prompts, none of them in pack {}'s pool; hspi computed their references itself on the provider's own tokens, so a provider cannot have prepared for them.",
                self.drawn, self.seed, self.pack
            );
        }
        format!(
            "{} prompts drawn at random (seed {}) from the {} of pack {}; another audit draws others, so a provider cannot special-case a handful of public prompts (it would have to recognise every prompt of the pool).",
            self.drawn, self.seed, self.pool, self.pack
        )
    }
}

pub fn markdown(checks: &[ContractCheck]) -> String {
    let mut s = String::from("\n## API contract (apart from the verdict)\n\n");
    for c in checks {
        s.push_str(&format!(
            "- **{}: {}** — {}\n",
            c.name,
            c.status.name(),
            c.detail
        ));
        for e in &c.evidence {
            s.push_str(&format!("  - {e}\n"));
        }
    }
    s
}

pub fn html(checks: &[ContractCheck], escape: &dyn Fn(&str) -> String) -> String {
    let mut s = String::from("<section id=\"contract\"><h2>API contract (apart from the verdict)</h2><table><tr><th>check</th><th>result</th><th>evidence</th></tr>");
    for c in checks {
        let evidence: String = c
            .evidence
            .iter()
            .map(|e| format!("<li>{}</li>", escape(e)))
            .collect();
        s.push_str(&format!(
            "<tr class=\"{}\"><td>{}</td><td><b>{}</b></td><td>{}<ul>{evidence}</ul></td></tr>",
            if c.status == CheckStatus::Fail {
                "fail"
            } else {
                ""
            },
            escape(&c.name),
            c.status.name(),
            escape(&c.detail)
        ));
    }
    s.push_str("</table></section>");
    s
}
