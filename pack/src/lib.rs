//! Audit packs: per model and engine family, a directory holding a pool of audit prompts, hspi's
//! references to them on every platform the pack covers, the trained classifier (with its
//! determinism flags), the billing counts of every prompt, and a manifest naming the model and
//! where each platform's answers came from. A pack is content-addressed: its id is the hash of
//! its manifest and of every file, so one altered byte is refused, naming the file.
//!
//! This crate owns the format (write, verify, install, list, draw); building a pack (running
//! engines, training) is a workflow of the audit crate.

mod content;
mod draw;
mod error;
mod installed;
mod manifest;

pub use content::{dataset_dirs, seal, Pack};
pub use draw::{draw, fresh_seed, Draw};
pub use error::PackError;
pub use installed::{copy_tree, find_installed, install, installed, listing, packs_dir};
pub use manifest::{
    PackManifest, PackModel, PackPlatform, PoolInfo, PromptTokens, CLASSIFIER, MANIFEST, POOL,
    PROMPT_TOKENS, REFERENCES, REPEATS, SCHEMA,
};
