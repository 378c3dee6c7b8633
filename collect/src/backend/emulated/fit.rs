//! Recover which kernel a GPU library ran for each GEMM from the GPU's committed outputs alone:
//! a coordinate search over candidate kernels (tensor-core block sizes and split-K, CUDA-core
//! FMA orders), one GEMM shape at a time, keeping a change only when more of the records are
//! reproduced bit for bit. Batches are formed as hspi's collector formed them on the GPU (probes
//! in probe-set order, `bs` at a time, the last one shorter), so a shape the short batch ran is
//! fitted on its own.
//!
//! The search sees only final outputs: a wrong kernel early in the network shows as noise at the
//! end. Scoring probes matched, then values matched, then the log-ulp distance lets it climb
//! where nothing matches yet; where it cannot climb (no candidate brings any value closer), the
//! figures say so and nothing is claimed.

use std::collections::BTreeMap;

use hspi_datasets::{
    ulp_diff, Accumulator, Hardware, KernelOptions, NumericFormat, Platform, ReductionOrder,
};

use super::gpu::{Activations, GpuModel};
use super::gpu_dot::GpuDot;
use super::plan::GemmShape;
use super::plan::{FitFigures, KernelPlan, PlannedGemm};
use super::tensor_core::Arch;
use crate::error::{CollectError, Result};
use crate::zoo::ImageModel;

/// What is fitted: one GPU platform's records of an image model.
pub struct FitTask<'a> {
    pub model: &'a ImageModel,
    pub platform: &'a Platform,
    pub arch: Arch,
    /// Inputs in the order the collector ran them (the probe set's).
    pub inputs: Vec<Vec<f32>>,
    /// The platform's output for each input.
    pub expected: Vec<Vec<f32>>,
    /// Where the records came from, for the plan's figures.
    pub dataset: String,
    /// At most this many sweeps over the shapes.
    pub passes: usize,
    /// Plans already fitted for other platforms of this dataset. A shape that one of them ran at
    /// this format and accumulator starts from its kernel (from the plan that reproduced the
    /// largest share of its probes): a bs32 platform's last batch of 8 runs the bs8 shapes,
    /// which its 8 probes alone cannot recover when all four GEMMs must be right before any
    /// logit matches.
    pub fitted: &'a [KernelPlan],
}

/// The kernels that `fitted` plans for `platform`'s format and accumulator chose, each shape's
/// from the plan that reproduced the largest share of its probes.
fn known_kernels(fitted: &[KernelPlan], platform: &Platform) -> BTreeMap<GemmShape, KernelOptions> {
    let share = |plan: &KernelPlan| {
        plan.fit
            .as_ref()
            .map_or(0.0, |f| f.probes_matched as f64 / f.probes.max(1) as f64)
    };
    let mut siblings: Vec<&KernelPlan> = fitted
        .iter()
        .filter(|plan| {
            plan.platform.format == platform.format
                && plan.platform.kernel.map(|k| k.accumulator)
                    == platform.kernel.map(|k| k.accumulator)
        })
        .collect();
    siblings.sort_by(|a, b| share(b).total_cmp(&share(a)));
    let mut known = BTreeMap::new();
    for plan in siblings {
        for g in &plan.gemms {
            if let Ok(kernel) = g.kernel.parse() {
                let shape = GemmShape {
                    m: g.m,
                    n: g.n,
                    k: g.k,
                };
                known.entry(shape).or_insert(kernel);
            }
        }
    }
    known
}

/// The tensor-core rule of a GPU platform's hardware (sm 8.x → sm80, 9.x → sm90).
pub fn arch_of(platform: &Platform) -> Result<Arch> {
    match &platform.hardware {
        Hardware::Cuda {
            compute_capability: (9, _),
            ..
        } => Ok(Arch::Sm90),
        Hardware::Cuda {
            compute_capability: (8, _),
            ..
        } => Ok(Arch::Sm80),
        _ => Err(CollectError::Unsupported {
            platform: platform.to_string(),
            model: "a kernel fit".into(),
            reason: "kernels are fitted for GPUs of compute capability 8.x (sm80) or 9.x (sm90)"
                .into(),
        }),
    }
}

/// The split-K counts that cut `k` differently, slices being ⌈k/S⌉ rounded up to whole blocks
/// of `block` (as `GpuDot` and `Gemm` cut them); a count past K's blocks is none.
fn splits(k: usize, block: usize) -> Vec<u32> {
    let mut lens = Vec::new();
    let mut out = Vec::new();
    for split in 1..=k.div_ceil(block) {
        let len = k.div_ceil(split).div_ceil(block) * block;
        if k.div_ceil(len) == split && !lens.contains(&len) {
            lens.push(len);
            out.push(split as u32);
        }
    }
    out
}

/// The kernels tried for a GEMM of depth `k` at `format`, accumulating in `acc`.
pub fn candidates(format: NumericFormat, acc: Accumulator, k: usize) -> Vec<KernelOptions> {
    let kernel = |order, split_k| KernelOptions {
        accumulator: acc,
        order,
        split_k,
        fma: true,
    };
    let mut out = Vec::new();
    let groups: &[u32] = match format {
        NumericFormat::Tf32 => &[4, 8],
        NumericFormat::F16 | NumericFormat::Bf16 => &[8, 16],
        _ => &[],
    };
    // Every way to cut K into slices of whole blocks, down to one block per slice: the H100's
    // tf32 conv2 at m = 16 adds each k8 step to an f32 sum.
    for &group in groups {
        for split in splits(k, group as usize) {
            out.push(kernel(ReductionOrder::TensorCore { group }, split));
        }
    }
    // Sequential FMA chains over every slicing of K, down to one product per slice (products
    // rounded alone, added in f32: the H100's f32 conv1 at batch 1); its f32 conv2 chains 4.
    for split in splits(k, 1) {
        out.push(kernel(ReductionOrder::Sequential, split));
    }
    out.push(kernel(ReductionOrder::Pairwise, 1));
    for lanes in [2u32, 4, 8, 16, 32, 64] {
        for vector in [1u32, 2, 4, 8] {
            if (lanes * vector) as usize <= k {
                out.push(kernel(ReductionOrder::Lanes { lanes, vector }, 1));
                out.push(kernel(
                    ReductionOrder::Interleaved {
                        slices: lanes,
                        vector,
                    },
                    1,
                ));
            }
        }
    }
    out
}

/// Probes matched, values matched, and −Σ log2(1 + ulps): larger is closer.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Score {
    probes: usize,
    values: usize,
    closeness: f64,
}

impl Score {
    fn of(outputs: &[Vec<f32>], expected: &[Vec<f32>]) -> Score {
        let mut s = Score::default();
        for (o, e) in outputs.iter().zip(expected) {
            let mut all = o.len() == e.len();
            for (a, b) in o.iter().zip(e) {
                let d = ulp_diff(*a, *b);
                if d == 0 {
                    s.values += 1;
                } else {
                    all = false;
                    s.closeness -= (1.0 + d.unsigned_abs() as f64).log2();
                }
            }
            s.probes += usize::from(all);
        }
        s
    }

    fn add(self, o: Score) -> Score {
        Score {
            probes: self.probes + o.probes,
            values: self.values + o.values,
            closeness: self.closeness + o.closeness,
        }
    }

    fn better_than(&self, o: &Score) -> bool {
        (self.probes, self.values) > (o.probes, o.values)
            || ((self.probes, self.values) == (o.probes, o.values)
                && self.closeness > o.closeness + 1e-9)
    }
}

/// A batch recomputed under a trial kernel: its index and every layer's input from the
/// changed layer on.
type Redone = (usize, Vec<Activations>);

/// A GEMM shape's kernel and where it runs: its layer, and the batches of its length.
struct Site {
    kernel: KernelOptions,
    layer: usize,
    batches: Vec<usize>,
}

/// The state of the search: the kernels chosen so far and, per batch, every layer's input and
/// the batch's score under them.
struct Search<'a> {
    task: &'a FitTask<'a>,
    gpu: GpuModel,
    /// Probe index ranges, in the collector's order.
    batches: Vec<std::ops::Range<usize>>,
    /// Each shape's kernel so far, and where it runs.
    chosen: BTreeMap<GemmShape, Site>,
    /// acts[b][l]: batch b's input to layer l (the last entry is the output).
    acts: Vec<Vec<Activations>>,
    scores: Vec<Score>,
}

impl<'a> Search<'a> {
    fn new(task: &'a FitTask<'a>, initial: impl Fn(GemmShape) -> KernelOptions) -> Result<Self> {
        let gpu = GpuModel::new(task.arch, task.platform.format, task.model)?;
        let bs = (task.platform.batch_size as usize).max(1);
        let batches: Vec<_> = (0..task.inputs.len())
            .step_by(bs)
            .map(|s| s..(s + bs).min(task.inputs.len()))
            .collect();
        let mut chosen = BTreeMap::new();
        for (b, range) in batches.iter().enumerate() {
            for layer in 0..gpu.layers() {
                if let Some(shape) = gpu.gemm_shape(layer, range.len()) {
                    let site = chosen.entry(shape).or_insert_with(|| Site {
                        kernel: initial(shape),
                        layer,
                        batches: Vec::new(),
                    });
                    site.batches.push(b);
                }
            }
        }
        let mut s = Search {
            task,
            gpu,
            batches,
            chosen,
            acts: Vec::new(),
            scores: Vec::new(),
        };
        for b in 0..s.batches.len() {
            let images: Vec<&[f32]> = s.batches[b]
                .clone()
                .map(|i| task.inputs[i].as_slice())
                .collect();
            let input = s.gpu.input(&images);
            let acts = s.run_from(b, 0, input, None)?;
            s.scores.push(s.score(b, acts.last().expect("an output")));
            s.acts.push(acts);
        }
        Ok(s)
    }

    fn dot(&self, shape: GemmShape, trial: Option<(GemmShape, KernelOptions)>) -> Result<GpuDot> {
        let kernel = match trial {
            Some((s, k)) if s == shape => k,
            _ => self.chosen[&shape].kernel,
        };
        GpuDot::new(self.gpu.arch, self.gpu.format, kernel)
    }

    /// Layers `from..` of batch `b` from `input`, with `trial` replacing one shape's kernel;
    /// every layer's input and the output.
    fn run_from(
        &self,
        b: usize,
        from: usize,
        input: Activations,
        trial: Option<(GemmShape, KernelOptions)>,
    ) -> Result<Vec<Activations>> {
        let mut out = vec![input];
        for l in from..self.gpu.layers() {
            let dot = match self.gpu.gemm_shape(l, self.batches[b].len()) {
                Some(shape) => Some(self.dot(shape, trial)?),
                None => None,
            };
            let next = self
                .gpu
                .step(l, out.last().expect("an input"), dot.as_ref());
            out.push(next);
        }
        Ok(out)
    }

    fn score(&self, b: usize, output: &Activations) -> Score {
        let per = output.values.len() / output.batch.max(1);
        let outputs: Vec<Vec<f32>> = output.values.chunks(per).map(<[f32]>::to_vec).collect();
        Score::of(&outputs, &self.task.expected[self.batches[b].clone()])
    }

    /// The total score with `kernel` at `shape`, and the recomputed batches.
    fn trial(&self, shape: GemmShape, kernel: KernelOptions) -> Result<(Score, Vec<Redone>)> {
        let Site { layer, batches, .. } = &self.chosen[&shape];
        let layer = *layer;
        let mut total = Score::default();
        let mut redone = Vec::new();
        for (b, score) in self.scores.iter().enumerate() {
            if batches.contains(&b) {
                let acts =
                    self.run_from(b, layer, self.acts[b][layer].clone(), Some((shape, kernel)))?;
                total = total.add(self.score(b, acts.last().expect("an output")));
                redone.push((b, acts));
            } else {
                total = total.add(*score);
            }
        }
        Ok((total, redone))
    }

    fn total(&self) -> Score {
        self.scores.iter().fold(Score::default(), |a, s| a.add(*s))
    }

    /// One sweep over the shapes, last layer first; whether anything improved.
    fn sweep(&mut self, format: NumericFormat, acc: Accumulator) -> Result<bool> {
        let mut improved = false;
        let mut shapes: Vec<GemmShape> = self.chosen.keys().copied().collect();
        shapes.sort_by_key(|s| std::cmp::Reverse(self.chosen[s].layer));
        for shape in shapes {
            let kernels = candidates(format, acc, shape.k);
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
            let chunk = kernels.len().div_ceil(threads).max(1);
            let results: Vec<Result<(Score, KernelOptions)>> = std::thread::scope(|scope| {
                let handles: Vec<_> = kernels
                    .chunks(chunk)
                    .map(|part| {
                        let me = &*self;
                        scope.spawn(move || {
                            part.iter()
                                .map(|k| me.trial(shape, *k).map(|(s, _)| (s, *k)))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| h.join().expect("a trial does not panic"))
                    .collect()
            });
            let mut best = (self.total(), self.chosen[&shape].kernel);
            for r in results {
                let (score, kernel) = r?;
                if score.better_than(&best.0) {
                    best = (score, kernel);
                }
            }
            if best.1 != self.chosen[&shape].kernel {
                let (_, redone) = self.trial(shape, best.1)?;
                let site = self.chosen.get_mut(&shape).expect("a chosen shape");
                site.kernel = best.1;
                let layer = site.layer;
                for (b, acts) in redone {
                    self.scores[b] = self.score(b, acts.last().expect("an output"));
                    self.acts[b].truncate(layer);
                    self.acts[b].extend(acts);
                }
                improved = true;
            }
        }
        Ok(improved)
    }

    fn outputs(&self) -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for acts in &self.acts {
            let o = acts.last().expect("an output");
            let per = o.values.len() / o.batch.max(1);
            out.extend(o.values.chunks(per).map(<[f32]>::to_vec));
        }
        out
    }
}

/// How far `outputs` lie from `expected`, as a plan's figures.
pub fn figures(outputs: &[Vec<f32>], expected: &[Vec<f32>], dataset: &str) -> FitFigures {
    let mut distances: Vec<u64> = Vec::new();
    let (mut values, mut matched, mut probes_matched) = (0, 0, 0);
    for (o, e) in outputs.iter().zip(expected) {
        let mut all = o.len() == e.len();
        for (a, b) in o.iter().zip(e) {
            values += 1;
            let d = ulp_diff(*a, *b).unsigned_abs();
            if d == 0 {
                matched += 1;
            } else {
                all = false;
                distances.push(d);
            }
        }
        probes_matched += usize::from(all);
    }
    distances.sort_unstable();
    FitFigures {
        dataset: dataset.into(),
        probes: expected.len(),
        probes_matched,
        values,
        values_matched: matched,
        max_ulp: distances.last().copied().unwrap_or(0),
        median_ulp_of_differing: distances.get(distances.len() / 2).copied().unwrap_or(0),
    }
}

/// Fit a kernel plan for `task.platform`, starting every shape at a sibling plan's kernel for it
/// ([`FitTask::fitted`]) or else at the architecture's own tensor-core kernel (CUDA-core
/// sequential FMAs for f32).
pub fn fit(task: &FitTask) -> Result<KernelPlan> {
    if task.inputs.len() != task.expected.len() || task.inputs.is_empty() {
        return Err(CollectError::TrainingData(format!(
            "{}: {} inputs and {} records to fit",
            task.platform,
            task.inputs.len(),
            task.expected.len()
        )));
    }
    let format = task.platform.format;
    let acc = task
        .platform
        .kernel
        .map_or(Accumulator::F32, |k| k.accumulator);
    let known = known_kernels(task.fitted, task.platform);
    let initial = |shape: GemmShape| {
        known.get(&shape).copied().unwrap_or(KernelOptions {
            accumulator: acc,
            order: match format {
                NumericFormat::F16 | NumericFormat::Bf16 | NumericFormat::Tf32 => {
                    ReductionOrder::TensorCore {
                        group: task.arch.native_group(format),
                    }
                }
                _ => ReductionOrder::Sequential,
            },
            split_k: 1,
            fma: true,
        })
    };
    let mut search = Search::new(task, initial)?;
    for _ in 0..task.passes.max(1) {
        if search.total().probes == task.inputs.len() || !search.sweep(format, acc)? {
            break;
        }
    }
    Ok(KernelPlan {
        platform: task.platform.clone(),
        rule: task.arch.to_string(),
        model: task.model.id.clone(),
        gemms: search
            .chosen
            .iter()
            .map(|(s, site)| PlannedGemm {
                m: s.m,
                n: s.n,
                k: s.k,
                kernel: site.kernel.to_string(),
            })
            .collect(),
        fit: Some(figures(&search.outputs(), &task.expected, &task.dataset)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_plans_of_the_same_format_and_accumulator_seed_a_fit() {
        let plan = |platform: &str, matched: usize, kernel: &str| KernelPlan {
            platform: platform.parse().unwrap(),
            rule: "sm90".into(),
            model: "cnn".into(),
            gemms: vec![PlannedGemm {
                m: 8,
                n: 10,
                k: 64,
                kernel: kernel.into(),
            }],
            fit: Some(figures(
                &vec![vec![1.0]; matched],
                &vec![vec![1.0]; matched],
                "d",
            )),
        };
        // A plan that reproduced 2 of 3 probes yields to one that reproduced all of its 2.
        let mut partial = plan(
            "cuda-h100-sm90-132sm/cublas/f32/bs1",
            2,
            "acc-f32.seq.sk4.fma",
        );
        partial.fit.as_mut().unwrap().probes = 3;
        let fitted = [
            partial,
            plan(
                "cuda-h100-sm90-132sm/cublas/tf32/bs8",
                2,
                "acc-f32.tc8.sk2.fma",
            ),
            plan(
                "cuda-h100-sm90-132sm/cublas/f32/bs8",
                2,
                "acc-f32.il16x1.sk1.fma",
            ),
        ];
        let bs32: Platform = "cuda-h100-sm90-132sm/cublas/f32/bs32".parse().unwrap();
        let known = known_kernels(&fitted, &bs32);
        let shape = GemmShape { m: 8, n: 10, k: 64 };
        assert_eq!(known.len(), 1);
        assert_eq!(known[&shape].to_string(), "acc-f32.il16x1.sk1.fma");
    }

    #[test]
    fn candidates_cut_k_differently_and_fit_the_format() {
        let c = candidates(NumericFormat::Tf32, Accumulator::F32, 64);
        let tc: Vec<String> = c
            .iter()
            .filter(|k| matches!(k.order, ReductionOrder::TensorCore { .. }))
            .map(|k| k.to_string())
            .collect();
        assert!(tc.contains(&"acc-f32.tc8.sk2.fma".to_string()));
        assert!(tc.contains(&"acc-f32.tc4.sk16.fma".to_string()));
        // 64 in 3 slices of 24 (whole blocks of 8): 24, 24, 16.
        assert!(tc.contains(&"acc-f32.tc8.sk3.fma".to_string()));
        assert!(!tc.iter().any(|k| k.starts_with("acc-f32.tc16")));
        let f32_only = candidates(NumericFormat::F32, Accumulator::F32, 9);
        assert!(f32_only
            .iter()
            .all(|k| !matches!(k.order, ReductionOrder::TensorCore { .. })));
        assert!(f32_only
            .iter()
            .any(|k| k.to_string() == "acc-f32.ln2x4.sk1.fma"));
    }

    #[test]
    fn figures_count_matches_and_distances() {
        let f = figures(
            &[vec![1.0, 2.0], vec![1.0, 3.0]],
            &[
                vec![1.0, 2.0],
                vec![1.0, f32::from_bits(3f32.to_bits() + 5)],
            ],
            "d",
        );
        assert_eq!((f.probes, f.probes_matched), (2, 1));
        assert_eq!((f.values, f.values_matched), (4, 3));
        assert_eq!((f.max_ulp, f.median_ulp_of_differing), (5, 5));
    }
}
