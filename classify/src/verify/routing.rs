//! Mixed routing: a provider that sends a share of its requests to a cheaper deployment. The
//! sequential test weighs all answers as one platform's; here each answer is settled on its own
//! (`FormatShapes::settled`: every other format group ruled out, its own not), and answers settled as
//! two formats, each at least [`MIN_ROUTED`] times, are a mixture: named with each format's share
//! of the settled answers and its 95 % Clopper–Pearson interval. Fewer answers of the second
//! format hold every single-format verdict (the aggregate of a mixture looks like a format no
//! reference covers) until the budget ends, inconclusive.

use hspi_datasets::{Dimension, NumericFormat};

use super::routed_share::{describe_routes, RoutedShare};
use super::{Verdict, Verifier};
use crate::dimension_verdict::{DimensionStatus, DimensionVerdict};
use crate::sources::format_identity::{route_group, FormatIdentity};

/// Least answers settled as a second format before the answers are called a mixture. An honest
/// answer settled as another format is rare (none in the test suite's honest audits, see
/// docs/how-hspi-decides.md#fig-mixed-routing); three in one audit rarer still.
pub const MIN_ROUTED: usize = 3;

/// The two-sided error of a share's interval.
const INTERVAL_ERROR: f64 = 0.05;

impl Verifier<'_> {
    /// The group a format stands in for routing ([`route_group`]).
    fn route_group(&self, f: NumericFormat) -> NumericFormat {
        match &self.format_tally {
            Some(tally) => route_group(tally.formats()[0], f),
            None => f,
        }
    }

    /// A route's name: its group's formats (`f32/f16`, the base with the formats within a
    /// change of engine's reach; a KV-cached format beside its weights').
    pub(super) fn route_name(&self, f: NumericFormat) -> String {
        let Some(tally) = &self.format_tally else {
            return f.to_string();
        };
        let group = self.route_group(f);
        let names: Vec<String> = tally
            .formats()
            .into_iter()
            .filter(|g| self.route_group(*g) == group)
            .map(|g| g.to_string())
            .collect();
        names.join("/")
    }

    /// What a route is, as its answers together tell, in words without figures (so audits
    /// compare): its name where they are a known format, else what they are (a format no
    /// reference covers is never given a known name).
    fn route_described(&self, group: NumericFormat) -> String {
        match self.route_identity(group) {
            Some(FormatIdentity::Known { .. }) | None => self.route_name(group),
            Some(identity) => identity.nearest_known(),
        }
    }

    /// Whether the claim allows some format of `f`'s group.
    fn route_on_claim(&self, f: NumericFormat) -> bool {
        let group = self.route_group(f);
        self.model
            .classes
            .iter()
            .flat_map(|c| &c.members)
            .filter(|m| self.route_group(m.format) == group)
            .any(|m| self.claim.matches_dimension(Dimension::Format, m))
    }

    /// Answers settled per format group, most first (then in format order), and how many
    /// answers settled one.
    fn route_counts(&self) -> (Vec<(NumericFormat, usize)>, usize) {
        let Some(tally) = &self.format_tally else {
            return (Vec::new(), 0);
        };
        let mut counts: Vec<(NumericFormat, usize)> = Vec::new();
        for f in tally.routes.iter().flatten() {
            match counts.iter_mut().find(|(g, _)| *g == *f) {
                Some((_, n)) => *n += 1,
                None => counts.push((*f, 1)),
            }
        }
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let settled = counts.iter().map(|(_, n)| n).sum();
        (counts, settled)
    }

    /// Answers that settled no single format.
    pub(super) fn unsettled_routes(&self) -> usize {
        self.format_tally
            .as_ref()
            .map_or(0, |t| t.routes.iter().filter(|r| r.is_none()).count())
    }

    /// Every format the answers settled, with its share: the mixture's description.
    pub(super) fn routed_shares(&self) -> Vec<RoutedShare> {
        let (counts, settled) = self.route_counts();
        counts
            .into_iter()
            .map(|(f, k)| {
                let (low, high) = clopper_pearson(k, settled, INTERVAL_ERROR);
                RoutedShare {
                    format: self.route_described(f),
                    on_claim: self.route_on_claim(f),
                    answers: k,
                    share: k as f64 / settled as f64,
                    low,
                    high,
                }
            })
            .collect()
    }

    /// What the answers settled as `group` are together, where the format evidence has it.
    fn route_identity(&self, group: NumericFormat) -> Option<FormatIdentity> {
        self.format_tally.as_ref()?.route_identity(group)
    }

    /// The routes a mixture may be made of, with their answers: those whose answers together
    /// are not a format no reference covers (one unseen format's answers, near two references
    /// in size, settle some as each), and named only where they are a known one.
    fn plausible_routes(&self, known_only: bool) -> Vec<(NumericFormat, usize)> {
        let (counts, _) = self.route_counts();
        counts
            .into_iter()
            .filter(|(f, _)| match self.route_identity(*f) {
                Some(FormatIdentity::Known { .. }) | None => true,
                Some(FormatIdentity::Unconfirmed { .. }) => !known_only,
                Some(FormatIdentity::Unseen { .. }) => false,
            })
            .collect()
    }

    /// The answers are a mixture: two known formats settled at least [`MIN_ROUTED`] times
    /// each, one of them off the claim.
    pub(super) fn mixed(&self) -> bool {
        let routes: Vec<(NumericFormat, usize)> = self
            .plausible_routes(true)
            .into_iter()
            .filter(|(_, k)| *k >= MIN_ROUTED)
            .collect();
        routes.len() >= 2 && routes.iter().any(|(f, _)| !self.route_on_claim(*f))
    }

    /// Whether the answers look like a format no reference covers only with a few that settled
    /// no format: every answer that did settle one is a known format on the claim, and fewer
    /// than [`MIN_ROUTED`] settled none. A share routed elsewhere looks so before its answers
    /// settle (a Q4_0 answer whose size leaves q8_0 open settles neither, and with five f16
    /// answers its deviation makes the whole look unseen: 12 of 200 audits of 10 % routed to
    /// Q4_0 ended so after 7 answers), so more answers are asked rather than calling the
    /// whole one format no reference covers.
    pub(super) fn unseen_by_few_unsettled(&self) -> bool {
        let unsettled = self.unsettled_routes();
        if unsettled == 0 || unsettled >= MIN_ROUTED {
            return false;
        }
        let (counts, settled) = self.route_counts();
        settled > 0
            && counts.iter().all(|(f, _)| {
                self.route_on_claim(*f)
                    && matches!(self.route_identity(*f), Some(FormatIdentity::Known { .. }))
            })
    }

    /// Why no single-format verdict is given yet: answers settled as two formats, one off the
    /// claim, neither unseen, too few of the second (or its pattern not yet shown) for a
    /// mixture.
    pub(super) fn routes_split(&self) -> Option<String> {
        let routes = self.plausible_routes(false);
        if routes.len() < 2 || self.mixed() || routes.iter().all(|(f, _)| self.route_on_claim(*f)) {
            return None;
        }
        let (_, settled) = self.route_counts();
        let seen: Vec<String> = routes
            .iter()
            .map(|(f, k)| format!("{} {k}", self.route_described(*f)))
            .collect();
        Some(format!(
            "of {settled} answers that each settle one format, {}: a provider routing a share of its requests elsewhere looks so, but hspi names a mixture only from {MIN_ROUTED} answers of each, its format known",
            seen.join(", ")
        ))
    }

    /// Where answers split between formats ([`Self::routes_split`]), the most answers settled
    /// off the claim: whether they are one format or a mixture, the claim fails, so a format
    /// mismatch is not held for a mixture that could only be another accusation (PyTorch's bf16
    /// sold as fp16, its answers each its engine's own rounding: one in eight settles as the
    /// claimed f16 and held 36 of 200 fresh audits inconclusive within 64 tokens).
    pub(super) fn split_mostly_off_claim(&self) -> bool {
        let routes = self.plausible_routes(false);
        let most_on = routes
            .iter()
            .filter(|(f, _)| self.route_on_claim(*f))
            .map(|(_, k)| *k)
            .max()
            .unwrap_or(0);
        routes
            .iter()
            .any(|(f, k)| !self.route_on_claim(*f) && *k > most_on)
    }

    /// Whether a format accusation naming one format for every answer waits for another answer:
    /// where the audit was asked to see a share routed elsewhere (`--routed-share`), until more
    /// answers than a mixture needs of each route ([`MIN_ROUTED`]). Where an answer counts more
    /// than a third of the accusing threshold (a bit-identical reproduction; answers counting 2
    /// nats, tried), three answers alike accuse: with 30 % routed to Q4_0, three Q4_0 answers
    /// first named q4_0 alone in 9 of 200 audits. Once the budget is spent the accusation stands
    /// (`finish`).
    pub(super) fn single_format_early(&self) -> bool {
        self.params.routed_share.is_some() && self.evidence.len() <= MIN_ROUTED
    }

    /// The format accusation [`Self::single_format_early`] holds, where the answers make one.
    pub(super) fn held_format_mismatch(&self) -> Option<Verdict> {
        if self.routes_split().is_some() && !self.split_mostly_off_claim() {
            return None;
        }
        (self.format_accusable() && self.format_unaccused().is_none())
            .then(|| self.format_mismatch())
    }

    /// Settled answers an audit needs before calling the provider consistent, so that a share
    /// `share` routed elsewhere would have shown [`MIN_ROUTED`] answers but with probability
    /// at most the false-acceptance rate. An answer that settled no format may be a routed one
    /// whose format its few tokens left open (some of llama.cpp's Q4_0 answers of 8 tokens):
    /// each raises the count needed by one answer of the share.
    pub(super) fn routed_share_answers(&self) -> usize {
        let Some(share) = self.params.routed_share else {
            return 0;
        };
        let shown = MIN_ROUTED + self.unsettled_routes();
        (shown..100_000)
            .find(|n| binomial_below(shown, *n, share) <= self.params.false_acceptance)
            .unwrap_or(100_000)
    }

    /// The mixture's verdict.
    pub(super) fn mixture(&self) -> Verdict {
        Verdict::Mixed {
            routes: self.routed_shares(),
            settled: self.route_counts().1,
            unsettled: self.unsettled_routes(),
        }
    }

    /// The format's row of a mixture: a mismatch naming every format routed to.
    pub(super) fn mixed_format_row(&self, rows: &mut [DimensionVerdict], routes: &[RoutedShare]) {
        let Some(row) = rows.iter_mut().find(|r| r.dimension == Dimension::Format) else {
            return;
        };
        let (_, settled) = self.route_counts();
        // In the references' format order, so that audits name one mixture alike.
        let mut names: Vec<&str> = routes.iter().map(|r| r.format.as_str()).collect();
        if let Some(tally) = &self.format_tally {
            let order: Vec<String> = tally
                .formats()
                .into_iter()
                .map(|f| self.route_described(self.route_group(f)))
                .collect();
            names.sort_by_key(|n| order.iter().position(|o| o == n).unwrap_or(usize::MAX));
        }
        row.status = DimensionStatus::Mismatch;
        row.nearest = format!("mixed: {}", names.join(" + "));
        row.unseen = false;
        row.note = Some(describe_routes(routes, settled, self.unsettled_routes()));
    }

    /// Why a consistent verdict was held to the budget's end (`--routed-share`).
    pub(super) fn routing_short(&self) -> Option<String> {
        let share = self.params.routed_share?;
        let (_, settled) = self.route_counts();
        let needed = self.routed_share_answers();
        (settled < needed).then(|| format!(
            "the answers fit the claim, but {settled} of them settle one format each, fewer than the {needed} that a share of {:.0} % routed elsewhere (--routed-share) needs to show {MIN_ROUTED} answers of another format but with probability {}",
            100.0 * share,
            self.params.false_acceptance
        ))
    }

    /// Whether a consistent verdict waits for more settled answers (`--routed-share`).
    pub(super) fn routing_unchecked(&self) -> bool {
        self.route_counts().1 < self.routed_share_answers()
    }
}

/// P(X < k) for X ~ Binomial(n, p).
fn binomial_below(k: usize, n: usize, p: f64) -> f64 {
    if p <= 0.0 {
        return 1.0;
    }
    if p >= 1.0 {
        return if k > n { 1.0 } else { 0.0 };
    }
    let (lp, lq) = (p.ln(), (1.0 - p).ln());
    let mut log_choose = 0.0;
    let mut sum = 0.0;
    for i in 0..k.min(n + 1) {
        if i > 0 {
            log_choose += ((n + 1 - i) as f64).ln() - (i as f64).ln();
        }
        sum += (log_choose + i as f64 * lp + (n - i) as f64 * lq).exp();
    }
    sum.min(1.0)
}

/// The Clopper–Pearson interval of a share `k` of `n` at two-sided error `alpha`.
pub fn clopper_pearson(k: usize, n: usize, alpha: f64) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    // P(X ≥ k | p) grows with p; P(X ≤ k | p) falls: each bound by bisection.
    let solve = |f: &dyn Fn(f64) -> f64| {
        let (mut lo, mut hi) = (0.0f64, 1.0f64);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if f(mid) < alpha / 2.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        0.5 * (lo + hi)
    };
    let low = if k == 0 {
        0.0
    } else {
        solve(&|p| 1.0 - binomial_below(k, n, p))
    };
    let high = if k == n {
        1.0
    } else {
        // P(X ≤ k | p) falls with p: find where it reaches alpha/2 from above.
        1.0 - solve(&|q| binomial_below(k + 1, n, 1.0 - q))
    };
    (low, high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clopper_pearson_matches_published_values() {
        // 7 of 24: 0.1262–0.5109 (the exact interval, as R's binom.test prints it).
        let (lo, hi) = clopper_pearson(7, 24, 0.05);
        assert!(
            (lo - 0.1262).abs() < 5e-4 && (hi - 0.5109).abs() < 5e-4,
            "{lo} {hi}"
        );
        let (lo, hi) = clopper_pearson(0, 10, 0.05);
        assert!(lo == 0.0 && (hi - 0.3085).abs() < 5e-4, "{hi}");
        let (lo, hi) = clopper_pearson(10, 10, 0.05);
        assert!((lo - 0.6915).abs() < 5e-4 && hi == 1.0, "{lo}");
    }

    #[test]
    fn binomial_tail_sums_to_one() {
        assert!((binomial_below(11, 10, 0.3) - 1.0).abs() < 1e-12);
        // P(X < 3) for n = 61, p = 0.1: 0.0491 (scipy's binom.cdf(2, 61, 0.1)).
        assert!((binomial_below(3, 61, 0.1) - 0.0491).abs() < 1e-4);
    }
}
