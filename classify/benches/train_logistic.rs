//! Training time of the default classifier on 10 000 answers of 3 200 bit features (100 logits x
//! 32 bits, HSPI-LD's shape): one fit at a fixed L2 strength, and the full default training
//! (4 strengths validated on one probe-grouped held-out fold, as for any training set above 8 M values, + the final fit). `cargo bench -p hspi-classify`.

use std::time::Instant;

use hspi_classify::linear::{fit, train, TrainParams};
use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn main() {
    let n: usize = std::env::var("N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let d: usize = std::env::var("D")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3_200);
    let classes = 6;
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    // Each class flips low mantissa bits with its own probabilities, as formats do.
    let p: Vec<Vec<f64>> = (0..classes)
        .map(|_| (0..d).map(|_| rng.random_range(0.3..0.7)).collect())
        .collect();
    let y: Vec<usize> = (0..n).map(|i| i % classes).collect();
    let mut x = Array2::<f64>::zeros((n, d));
    for (i, c) in y.iter().enumerate() {
        for j in 0..d {
            x[[i, j]] = f64::from(u8::from(rng.random_bool(p[*c][j])));
        }
    }
    let groups: Vec<String> = (0..n).map(|i| format!("probe{}", i / classes)).collect();

    let t = Instant::now();
    let m = fit(&x, &y, classes, 1.0, 200).expect("fit");
    let one = t.elapsed().as_secs_f64();
    let right = (0..n)
        .filter(|i| {
            let lp = m.log_proba(&x.row(*i).to_vec());
            hspi_datasets::top_label(&lp).unwrap_or(0) == y[*i]
        })
        .count();

    eprintln!("one fit: {one:.1} s");
    let t = Instant::now();
    let (_, v) = train(&x, &y, &groups, classes, &TrainParams::default()).expect("train");
    let full = t.elapsed().as_secs_f64();
    println!("| task | samples | features | classes | seconds |");
    println!("|---|---|---|---|---|");
    println!("| one fit (alpha 1) | {n} | {d} | {classes} | {one:.1} |");
    println!(
        "| default training (4 alphas on a held-out fold + final) | {n} | {d} | {classes} | {full:.1} |"
    );
    println!(
        "{{\"one_fit_s\": {one:.3}, \"default_train_s\": {full:.3}, \"train_accuracy\": {:.4}, \"validation\": {:?}}}",
        right as f64 / n as f64,
        v.scores
    );
}
