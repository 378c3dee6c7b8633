//! Distances between f32 values in units in the last place: how far two platforms' bits lie.

/// Distance in units in the last place between two f32 (signed, a − b), over the ordered
/// integer line where −0 and +0 are neighbours.
pub fn ulp_diff(a: f32, b: f32) -> i64 {
    ordered(a) - ordered(b)
}

fn ordered(x: f32) -> i64 {
    let b = x.to_bits() as i32;
    if b < 0 {
        i64::from(i32::MIN) - i64::from(b) - 1
    } else {
        i64::from(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulp_diff_counts_representable_steps() {
        let one = 1.0f32;
        assert_eq!(ulp_diff(f32::from_bits(one.to_bits() + 3), one), 3);
        assert_eq!(ulp_diff(0.0, -0.0), 1);
        assert_eq!(ulp_diff(-1.0, f32::from_bits((-1.0f32).to_bits() + 2)), 2);
        assert_eq!(ulp_diff(f32::from_bits(1), -f32::from_bits(1)), 3);
    }
}
