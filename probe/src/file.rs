//! Probe-set files: the JSON of a `ProbeSet`, every probe's id checked against its content on read.

use std::path::Path;

use hspi_datasets::ProbeSet;

use crate::error::ProbeError;

pub fn write_probe_set(path: &Path, set: &ProbeSet) -> Result<(), ProbeError> {
    let io = |source| ProbeError::Io {
        path: path.into(),
        source,
    };
    let json = serde_json::to_vec(set).expect("probe sets serialise");
    std::fs::write(path, json).map_err(io)
}

/// Write `set` to `path`; the line saying what was written.
pub fn save_probe_set(path: &Path, set: &ProbeSet) -> Result<String, ProbeError> {
    write_probe_set(path, set)?;
    Ok(format!(
        "wrote {} probes (set {}) to {}",
        set.probes.len(),
        hspi_datasets::short_id(&set.hash()),
        path.display()
    ))
}

pub fn read_probe_set(path: &Path) -> Result<ProbeSet, ProbeError> {
    let bytes = std::fs::read(path).map_err(|source| ProbeError::Io {
        path: path.into(),
        source,
    })?;
    let set: ProbeSet = serde_json::from_slice(&bytes).map_err(|e| ProbeError::Malformed {
        path: path.into(),
        reason: e.to_string(),
    })?;
    if let Some(index) = first_id_mismatch(&set.probes) {
        return Err(ProbeError::IdMismatch {
            path: path.into(),
            index,
            id: set.probes[index].id.clone(),
        });
    }
    let mut seen = std::collections::HashMap::new();
    for (index, p) in set.probes.iter().enumerate() {
        if let Some(first) = seen.insert(p.id.as_str(), index) {
            return Err(ProbeError::Duplicate {
                path: path.into(),
                first,
                index,
                id: p.id.clone(),
            });
        }
    }
    Ok(set)
}

/// The first probe whose id is not the hash of its input. Hashing every input's JSON is most of
/// the cost of reading a large probe set, so the probes are checked on every core.
fn first_id_mismatch(probes: &[hspi_datasets::Probe]) -> Option<usize> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = probes.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = probes
            .chunks(chunk)
            .enumerate()
            .map(|(c, part)| {
                scope.spawn(move || {
                    part.iter()
                        .position(|p| !p.id_matches_content())
                        .map(|i| c * chunk + i)
                })
            })
            .collect();
        parts
            .into_iter()
            .filter_map(|h| h.join().expect("hashing a probe does not panic"))
            .min()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random_images;

    #[test]
    fn write_read_round_trip_and_tamper_detection() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.json");
        let set = random_images(7, 5, [1, 8, 8]);
        write_probe_set(&path, &set).unwrap();
        assert_eq!(read_probe_set(&path).unwrap(), set);

        let mut bad = set.clone();
        if let hspi_datasets::ProbeInput::Image { pixels, .. } = &mut bad.probes[2].input {
            pixels[0] += 0.5;
        }
        write_probe_set(&path, &bad).unwrap();
        let e = read_probe_set(&path).unwrap_err().to_string();
        assert!(e.contains("probe 2"), "{e}");

        std::fs::write(&path, b"{not json").unwrap();
        assert!(read_probe_set(&path)
            .unwrap_err()
            .to_string()
            .contains("not a probe-set file"));

        let mut twice = set.clone();
        twice.probes.push(set.probes[1].clone());
        write_probe_set(&path, &twice).unwrap();
        let e = read_probe_set(&path).unwrap_err().to_string();
        assert!(e.contains("probes 1 and 5 are the same input"), "{e}");
    }

    #[test]
    fn identical_inputs_make_one_probe() {
        let one = random_images(3, 2, [1, 8, 8]);
        let inputs = [0, 1, 0].map(|i| one.probes[i].input.clone());
        let set = crate::seeded_set("test", 3, inputs);
        assert_eq!(set.probes.len(), 2);
        assert_eq!(set.probes[1].provenance.index, 1);
    }
}
