//! What a backend opens: a runner computes one model at one platform. Image models run on
//! [`ImageRunner`]s shared by worker threads ([`ImagePool`] spreads batches over them); every
//! runner, image or language model, is a [`Runner`] to the collector.

use hspi_datasets::Platform;

use crate::error::{CollectError, Result};

/// One call's inputs: flattened [C,H,W] images, or token-id prompts.
#[derive(Debug, Clone, Copy)]
pub enum Batch<'a> {
    Images(&'a [&'a [f32]]),
    Tokens(&'a [&'a [u32]]),
}

impl<'a> Batch<'a> {
    fn kind(&self) -> &'static str {
        match self {
            Batch::Images(_) => "images",
            Batch::Tokens(_) => "token ids",
        }
    }

    fn wrong(&self, platform: &Platform, expected: &'static str) -> CollectError {
        CollectError::WrongInput {
            platform: platform.to_string(),
            expected,
            got: self.kind(),
        }
    }

    /// The images, or an error naming the runner that expected them.
    pub fn images(self, platform: &Platform) -> Result<&'a [&'a [f32]]> {
        match self {
            Batch::Images(x) => Ok(x),
            other => Err(other.wrong(platform, "images")),
        }
    }

    /// The prompts, or an error naming the runner that expected them.
    pub fn tokens(self, platform: &Platform) -> Result<&'a [&'a [u32]]> {
        match self {
            Batch::Tokens(x) => Ok(x),
            other => Err(other.wrong(platform, "token ids")),
        }
    }
}

/// A model loaded at one platform, answering batches of inputs with one f32 logit vector each.
pub trait Runner: Send {
    fn platform(&self) -> &Platform;
    /// How many inputs one batch holds (the platform's batch size).
    fn batch_size(&self) -> usize {
        self.platform().batch_size as usize
    }
    /// How many batches one `forward` call may take: a runner that computes independent batches
    /// on several cores splits them itself, each still at the platform's batch size.
    fn batches_per_call(&self) -> usize {
        1
    }
    /// Logits per input, in input order.
    fn forward(&mut self, batch: Batch<'_>) -> Result<Vec<Vec<f32>>>;
}

/// An image classifier at one platform: a batch of flattened [C,H,W] inputs in, one logit vector
/// per input out.
pub trait ImageRunner: Send {
    fn platform(&self) -> &Platform;
    fn forward(&self, inputs: &[&[f32]]) -> Result<Vec<Vec<f32>>>;
}

/// Image runners of one platform, one per worker thread: platform-sized batches spread over the
/// workers in contiguous runs, outputs in input order.
pub struct ImagePool {
    pub(super) workers: Vec<Box<dyn ImageRunner>>,
}

impl Runner for ImagePool {
    fn platform(&self) -> &Platform {
        self.workers[0].platform()
    }

    fn batches_per_call(&self) -> usize {
        match self.workers.len() {
            1 => 1,
            // Enough inputs per worker that starting its thread costs little (a CNN forward
            // pass takes ~30 µs), few enough that a call stays short.
            workers => workers * (64 / self.batch_size().max(1)).max(1),
        }
    }

    fn forward(&mut self, batch: Batch<'_>) -> Result<Vec<Vec<f32>>> {
        let inputs = batch.images(self.platform())?;
        let bs = self.batch_size().max(1);
        let run = |runner: &dyn ImageRunner, part: &[&[f32]]| -> Result<Vec<Vec<f32>>> {
            let mut out = Vec::with_capacity(part.len());
            for batch in part.chunks(bs) {
                out.extend(runner.forward(batch)?);
            }
            Ok(out)
        };
        let batches = inputs.len().div_ceil(bs);
        if self.workers.len() == 1 || batches <= 1 {
            return run(self.workers[0].as_ref(), inputs);
        }
        let per_worker = batches.div_ceil(self.workers.len()) * bs;
        std::thread::scope(|scope| {
            let parts: Vec<_> = self
                .workers
                .iter_mut()
                .zip(inputs.chunks(per_worker))
                .map(|(runner, part)| scope.spawn(move || run(runner.as_ref(), part)))
                .collect();
            let mut out = Vec::with_capacity(inputs.len());
            for part in parts {
                out.extend(part.join().expect("a forward pass does not panic")?);
            }
            Ok(out)
        })
    }
}

/// A language model at one platform scoring every position of a given token sequence in one
/// causal pass: a fresh audit's teacher forcing, as a serving engine computes prompt logprobs.
pub trait AllPositions: Send {
    fn platform(&self) -> &Platform;
    /// Logits after each prefix `tokens[..k]`, `k` from `from` to the whole.
    fn logits_from(&mut self, tokens: &[u32], from: usize) -> Result<Vec<Vec<f32>>>;
}
