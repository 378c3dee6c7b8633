//! A spending cap that is never exceeded: every attempt reserves its worst case (one request, the
//! prompt's bytes as tokens, `max_tokens` out) before it is sent, and settles to the usage reported.

use std::sync::Mutex;

use crate::error::BudgetReached;

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BudgetLimits {
    pub max_requests: Option<u64>,
    pub max_output_tokens: Option<u64>,
    /// In the currency of the prices.
    pub max_cost: Option<f64>,
    /// Prices per million tokens.
    pub price_input_per_m: f64,
    pub price_output_per_m: f64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Spent {
    pub requests: u64,
    pub prompt_tokens: u64,
    pub output_tokens: u64,
    pub cost: f64,
}

impl std::fmt::Display for Spent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} requests, {} output tokens, cost {:.6}",
            self.requests, self.output_tokens, self.cost
        )
    }
}

pub struct Budget {
    limits: BudgetLimits,
    spent: Mutex<Spent>,
}

impl Budget {
    pub fn new(limits: BudgetLimits) -> Budget {
        Budget {
            limits,
            spent: Mutex::new(Spent::default()),
        }
    }

    fn cost(&self, prompt: u64, output: u64) -> f64 {
        (prompt as f64 * self.limits.price_input_per_m
            + output as f64 * self.limits.price_output_per_m)
            / 1e6
    }

    /// Reserve one attempt of at most `prompt_tokens` in and `max_tokens` out.
    pub fn reserve(&self, prompt_tokens: u64, max_tokens: u64) -> Result<(), BudgetReached> {
        let mut s = self.spent.lock().expect("budget lock");
        let after = Spent {
            requests: s.requests + 1,
            prompt_tokens: s.prompt_tokens + prompt_tokens,
            output_tokens: s.output_tokens + max_tokens,
            cost: s.cost + self.cost(prompt_tokens, max_tokens),
        };
        let l = &self.limits;
        let over = if l.max_requests.is_some_and(|m| after.requests > m) {
            Some(format!("{} requests", l.max_requests.unwrap_or(0)))
        } else if l.max_output_tokens.is_some_and(|m| after.output_tokens > m) {
            Some(format!(
                "{} output tokens",
                l.max_output_tokens.unwrap_or(0)
            ))
        } else if l.max_cost.is_some_and(|m| after.cost > m) {
            Some(format!("a cost of {:.6}", l.max_cost.unwrap_or(0.0)))
        } else {
            None
        };
        if let Some(limit) = over {
            return Err(BudgetReached {
                limit,
                requests: s.requests,
                output_tokens: s.output_tokens,
                cost: s.cost,
            });
        }
        *s = after;
        Ok(())
    }

    /// Replace a reservation's worst case by what was used (or release it when nothing was sent).
    pub fn settle(&self, reserved: (u64, u64), used: Option<(u64, u64)>) {
        let mut s = self.spent.lock().expect("budget lock");
        let (rp, ro) = reserved;
        let (up, uo) = used.unwrap_or(reserved);
        // Usage above the reservation (a server ignoring max_tokens) is still counted.
        s.prompt_tokens = s.prompt_tokens - rp + up;
        s.output_tokens = s.output_tokens - ro + uo;
        s.cost = s.cost - self.cost(rp, ro) + self.cost(up, uo);
    }

    pub fn spent(&self) -> Spent {
        *self.spent.lock().expect("budget lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_stop_before_any_cap_is_crossed() {
        let b = Budget::new(BudgetLimits {
            max_requests: Some(3),
            max_output_tokens: Some(20),
            ..Default::default()
        });
        b.reserve(5, 8).unwrap();
        b.reserve(5, 8).unwrap();
        let e = b.reserve(5, 8).unwrap_err().to_string();
        assert!(e.contains("20 output tokens"), "{e}");
        b.settle((5, 8), Some((4, 2)));
        b.reserve(5, 8).unwrap();
        assert!(b
            .reserve(1, 1)
            .unwrap_err()
            .to_string()
            .contains("3 requests"));
        assert_eq!(b.spent().requests, 3);
    }

    #[test]
    fn cost_cap_uses_prices_per_million() {
        let b = Budget::new(BudgetLimits {
            max_cost: Some(0.001),
            price_input_per_m: 100.0,
            price_output_per_m: 100.0,
            ..Default::default()
        });
        b.reserve(4, 5).unwrap(); // 9 tokens = 0.0009
        assert!(b.reserve(1, 1).unwrap_err().limit.contains("cost"));
    }
}
