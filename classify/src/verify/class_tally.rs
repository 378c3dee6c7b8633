//! The classes' tally: every answer's log-likelihood summed per class, which classes the claim
//! admits, and which some answer reproduced bit for bit.

/// Per class, what the answers so far say.
pub(super) struct ClassTally {
    /// Per class, the summed log-likelihood.
    pub(super) per_class: Vec<f64>,
    /// The classes the claim admits.
    pub(super) claimed: Vec<usize>,
    /// Classes some answer reproduced bit for bit.
    pub(super) reproduced: Vec<usize>,
}

impl ClassTally {
    pub(super) fn new(classes: usize, claimed: Vec<usize>) -> ClassTally {
        ClassTally {
            per_class: vec![0.0; classes],
            claimed,
            reproduced: Vec::new(),
        }
    }

    /// Add one answer's log-likelihoods.
    pub(super) fn add(&mut self, ll: &[f64]) {
        for (c, v) in self.per_class.iter_mut().zip(ll) {
            *c += v;
        }
    }

    /// The log-likelihood ratio, best alternative against best claimed class.
    pub(super) fn llr(&self) -> f64 {
        let best = |set: &mut dyn Iterator<Item = usize>| {
            set.map(|c| self.per_class[c])
                .fold(f64::NEG_INFINITY, f64::max)
        };
        let claim = best(&mut self.claimed.iter().copied());
        let alt = best(&mut (0..self.per_class.len()).filter(|c| !self.claimed.contains(c)));
        alt - claim
    }

    /// The most likely class among those `keep` admits.
    pub(super) fn best(&self, keep: impl Fn(usize) -> bool) -> usize {
        (0..self.per_class.len())
            .filter(|c| keep(*c))
            .max_by(|a, b| self.per_class[*a].total_cmp(&self.per_class[*b]))
            .unwrap_or(0)
    }

    /// Note that an answer reproduced class `c` bit for bit.
    pub(super) fn reproduced_by(&mut self, c: usize) {
        if !self.reproduced.contains(&c) {
            self.reproduced.push(c);
        }
    }
}
