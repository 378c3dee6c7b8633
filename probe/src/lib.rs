//! Probe generators. Every generator is a pure function of its seed: same seed, same bits.

mod error;
mod file;
mod prompts;
mod random;

pub use error::ProbeError;
pub use file::{read_probe_set, write_probe_set};
pub use prompts::prompts;
pub use random::{random_images, random_tokens};
