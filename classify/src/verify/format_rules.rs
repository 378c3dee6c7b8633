//! The format's own rules: its ratio from the evidence that tolerates a change of hardware or
//! build, the threshold an accusation needs, what the answers' format is, and why a format is
//! neither confirmed nor accused where the references do not cover it.

use hspi_datasets::{Dimension, NumericFormat};

use super::{Verdict, Verifier};
use crate::dimension_verdict::{dimension_llr, family_members, on_claim};
use crate::sources::format_evidence::{within_engine_noise, FORMAT_CAP};
use crate::sources::format_identity::FormatIdentity;

impl Verifier<'_> {
    /// What the answers' format is, as far as the format evidence and the shapes tell: None
    /// without format references.
    pub fn format_identity(&self) -> Option<FormatIdentity> {
        self.format_tally.as_ref()?.identity()
    }

    /// Why the claimed format cannot be called consistent although its ratio says so: the
    /// answers lack the rounding pattern of the format that explains them best.
    pub(super) fn format_blocked(&self) -> Option<String> {
        let identity = self.format_identity()?;
        (!identity.allows_consistent()).then(|| {
            format!(
                "the answers are {}: hspi cannot confirm the claimed format {} without a reference for what they are",
                identity.describe(),
                self.claim.get(Dimension::Format).unwrap_or("*")
            )
        })
    }

    /// Why the claimed format is not accused although the ratio rules out every format it covers:
    /// a quantised family's schemes differ in size and pattern (int8 is GGUF q8_0 and vLLM's
    /// W8A8 alike), so its known members stand for it only in part, and an honest provider of a
    /// scheme hspi has no reference for looks exactly so. Such a claim is accused only where the
    /// answers are firmly a known format outside the family. An exact format (`q8_0`) or a float
    /// family (`fp16`) is accused on the ratio alone.
    pub(super) fn format_unaccused(&self) -> Option<String> {
        if let Some(why) = self.cache_unaccused() {
            return Some(why);
        }
        let family = self.claim.format_family().filter(|f| f.quantised())?;
        let tally = self.format_tally.as_ref()?;
        let identity = self.format_identity()?;
        // A member known by its size alone (W8A8: its activations rounded each engine's own way)
        // that the answers' size fits still stands for the family.
        let member_fits = tally
            .formats()
            .iter()
            .any(|f| family.covers(*f) && tally.fits_by_size(*f));
        if tally.firmly().is_some_and(|f| !family.covers(f)) && !member_fits {
            return None;
        }
        Some(format!(
            "the answers are not {} (the {family} hspi has references for) but {}: hspi cannot tell whether they are another {family} scheme without a reference for it",
            family_members(family, &self.model.classes).join(" or "),
            identity.describe()
        ))
    }

    /// Why a claimed quantised KV cache (`f16+kv-q8_0`) is not accused although the ratio
    /// rules it out: builds round a cache differently (llama.cpp turns keys and values before
    /// rounding them since its attention rotation, and not before it; an unturned q4_0 cache
    /// lies far from hspi's turned one), so it is accused only where the answers are firmly a
    /// known format without that cache (full-precision, or another cache type).
    fn cache_unaccused(&self) -> Option<String> {
        let claimed: NumericFormat = self.claim.get(Dimension::Format)?.parse().ok()?;
        let cache = claimed.kv_cache()?;
        let identity = self.format_identity()?;
        if identity
            .firmly()
            .is_some_and(|f| f.kv_cache() != Some(cache))
        {
            return None;
        }
        Some(format!(
            "the answers are not {claimed} as hspi rounds its cache (llama.cpp's, turned before rounding) but {}: hspi cannot tell whether they are another build's {cache} cache without a reference for it",
            identity.describe()
        ))
    }

    /// The format's log-likelihood ratio (best class off the claimed format against the best on
    /// it): from the evidence that tolerates a change of hardware or build where the references
    /// cover every class's format, else from the classes' own. None when the claim leaves the
    /// format open or no reference has it.
    pub(super) fn format_llr(&self) -> Option<f64> {
        if self.unreferenced.contains(&Dimension::Format) {
            return None;
        }
        let llr = dimension_llr(
            &self.claim,
            Dimension::Format,
            &self.model.classes,
            self.format_scores(),
        )?;
        // With format evidence of its own, the claim is weighed answer by answer against the
        // best format off it, whichever that is.
        Some(self.format_tally.as_ref().map_or(llr, |t| t.claim))
    }

    /// The threshold a format accusation needs: the format evidence's own where there is some,
    /// else Wald's (the format is then weighed on the classes' evidence).
    ///
    /// Where the claimed formats and the best format off the claim are all within a change of
    /// engine's reach (f32 claimed, f16 nearest), the evidence is a contest of directions at the
    /// scale of the noise itself, a random walk of small steps: two capped answers more. vLLM's
    /// fp32, a quarter of f16's rounding from llama.cpp's F32 but leaning a little its way, was
    /// otherwise accused as f16 in 1 of 200 audits of 256 tokens.
    pub(super) fn format_accuse(&self) -> f64 {
        let Some(tally) = &self.format_tally else {
            return self.params.thresholds().0;
        };
        let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
        let claimed_fine = self
            .model
            .classes
            .iter()
            .zip(&on)
            .filter(|(_, on)| **on)
            .flat_map(|(c, _)| &c.members)
            .all(|m| within_engine_noise(m.format));
        let best_off = tally.best();
        let off_claim = self
            .model
            .classes
            .iter()
            .zip(&on)
            .filter(|(_, on)| !**on)
            .flat_map(|(c, _)| &c.members)
            .any(|m| Some(m.format) == best_off);
        if claimed_fine && off_claim && best_off.is_some_and(within_engine_noise) {
            self.params.format_accuse_threshold() + 2.0 * FORMAT_CAP
        } else {
            self.params.format_accuse_threshold()
        }
    }

    /// Whether the answers are as many as answers counting one cap each need to reach the
    /// format's accusing threshold: a format no reference covers is then settled as such.
    pub(super) fn unseen_settled(&self) -> bool {
        self.evidence.len() as f64 >= (self.format_accuse() / FORMAT_CAP).ceil()
    }

    /// Whether the format evidence has reached its accusing threshold ([`Self::format_accuse`]).
    pub(super) fn format_accusable(&self) -> bool {
        self.format_tally.is_some() && self.format_llr().is_some_and(|v| v >= self.format_accuse())
    }

    /// The per-class scores the format dimension is decided from.
    pub(super) fn format_scores(&self) -> &[f64] {
        self.format_tally
            .as_ref()
            .map_or(&self.class_tally.per_class, |t| &t.per_class)
    }

    /// An accusation on the format alone. The likely class is the best off the claimed format by
    /// the format evidence, then by the classes' own; named as a platform where answers
    /// reproduced it bit for bit, else by its format alone (the format evidence decides nothing
    /// else), or as a format no reference covers where the answers lack its pattern.
    pub(super) fn format_mismatch(&self) -> Verdict {
        let on = on_claim(&self.claim, Dimension::Format, &self.model.classes);
        let scores = self.format_scores();
        let best = (0..on.len())
            .filter(|c| !on[*c])
            .max_by(|a, b| {
                scores[*a]
                    .total_cmp(&scores[*b])
                    .then(self.class_tally.per_class[*a].total_cmp(&self.class_tally.per_class[*b]))
            })
            .unwrap_or(0);
        if self.format_tally.is_none() || self.class_tally.reproduced.contains(&best) {
            return self.mismatch(best, vec![Dimension::Format]);
        }
        let (likely_class, likely_platform) = match self.format_identity() {
            Some(FormatIdentity::Known { format: f, .. }) => (
                self.model.classes[best].id.clone(),
                format!("*/*/{f}/* (the format; the evidence decides no other dimension)"),
            ),
            Some(identity) => (String::new(), identity.describe()),
            None => return self.mismatch(best, vec![Dimension::Format]),
        };
        Verdict::Mismatch {
            likely_class,
            likely_platform,
            dimensions: vec![Dimension::Format],
        }
    }
}
