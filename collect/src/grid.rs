//! `--platforms` lists: platform strings mixed with groups, where a group is `default` (the
//! default grid) or a backend's name (`candle`, `emulated`, `cuda`: every platform that backend
//! runs the model at here).

pub use crate::backend::default_grid;

use hspi_datasets::Platform;

use crate::backend;
use crate::error::{CollectError, Result};
use crate::zoo::ModelId;

/// The platforms a comma-separated list names, in order; repeats collapse to the first
/// occurrence. A group whose backend cannot run the model here is an error saying why.
pub fn parse_platforms(spec: &str, model: ModelId) -> Result<Vec<Platform>> {
    let mut out: Vec<Platform> = Vec::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let group = match (item, backend::named(item)) {
            ("default" | "grid", _) => default_grid(model),
            (_, Some(backend)) => backend.platforms(model)?,
            (platform, None) => vec![platform.parse()?],
        };
        for p in group {
            if !out.contains(&p) {
                out.push(p);
            }
        }
    }
    Ok(out)
}

/// The platforms to collect here: as [`parse_platforms`], but a list naming nothing is an error.
pub fn platforms_to_run(spec: &str, model: ModelId) -> Result<Vec<Platform>> {
    let platforms = parse_platforms(spec, model)?;
    if platforms.is_empty() {
        return Err(CollectError::NoPlatforms(spec.into()));
    }
    Ok(platforms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_and_platform_strings_mix_in_one_list() {
        let model = ModelId::CnnDigits;
        let candle = parse_platforms("candle", model).unwrap();
        let extra = "cpu-avx2/emu/int8/acc-f32.seq.sk1.fma/bs1";
        let mixed = parse_platforms(&format!("{extra}, candle,{}", candle[0]), model).unwrap();
        assert_eq!(mixed[0].to_string(), extra);
        assert_eq!(
            &mixed[1..],
            &candle[..],
            "the repeat of candle[0] collapses"
        );
        let e = parse_platforms("candle,gpu/x/f32/bs1", model).unwrap_err();
        assert!(e.to_string().contains("gpu/x/f32/bs1"), "{e}");
        let e = parse_platforms("emulated", ModelId::TinyLm).unwrap_err();
        assert!(e.to_string().contains("image models only"), "{e}");
        assert!(platforms_to_run(" , ", model).is_err());
    }

    #[test]
    fn the_default_image_grid_has_at_least_24_distinct_platforms() {
        let g = default_grid(ModelId::CnnDigits);
        let set: std::collections::HashSet<_> = g.iter().collect();
        assert_eq!(set.len(), g.len());
        assert!(g.len() >= 24, "{}", g.len());
        let emulated = parse_platforms("emulated", ModelId::CnnDigits).unwrap();
        let candle = parse_platforms("candle", ModelId::CnnDigits).unwrap();
        assert_eq!(
            g,
            [candle, emulated].concat(),
            "candle first, as the demo shows"
        );
    }
}
