//! The kernels (`kernels.cu`, and `decoder.cu` for decoder language models), compiled by NVRTC for the GPU
//! at hand, and typed launchers for the image models' (the decoders' are in `decoder.rs`). FMA contraction is off: none of these kernels multiplies, and the flag
//! keeps it so if one ever does.

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions};

use super::cuda_err;
use crate::error::{CollectError, Result};

const SOURCE: &str = concat!(include_str!("kernels.cu"), include_str!("decoder.cu"));

/// How values are stored between layers; the numbers match `STORE_*` in kernels.cu.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    F32 = 0,
    F16 = 1,
    Bf16 = 2,
}

pub struct Kernels {
    pub stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    round_to_storage: CudaFunction,
    to_half_bits: CudaFunction,
    im2col: CudaFunction,
    add_bias_store: CudaFunction,
    relu: CudaFunction,
    max_pool2: CudaFunction,
}

/// One thread per element, 256 to a block.
pub fn grid(n: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((n as u32).div_ceil(256), 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

pub fn int(n: usize) -> i32 {
    i32::try_from(n).expect("tensor sizes of the zoo models fit in i32")
}

impl Kernels {
    pub fn compile(ctx: &Arc<CudaContext>, stream: Arc<CudaStream>) -> Result<Kernels> {
        let ptx = compile_ptx_with_opts(
            SOURCE,
            CompileOptions {
                fmad: Some(false),
                name: Some("hspi_kernels.cu".into()),
                ..Default::default()
            },
        )
        .map_err(|e| CollectError::Cuda(format!("NVRTC could not compile kernels.cu: {e}")))?;
        let module = ctx.load_module(ptx).map_err(cuda_err)?;
        let f = |name: &str| module.load_function(name).map_err(cuda_err);
        Ok(Kernels {
            round_to_storage: f("round_to_storage")?,
            to_half_bits: f("to_half_bits")?,
            im2col: f("im2col")?,
            add_bias_store: f("add_bias_store")?,
            relu: f("relu")?,
            max_pool2: f("max_pool2")?,
            stream,
            module,
        })
    }

    pub fn function(&self, name: &str) -> Result<CudaFunction> {
        self.module.load_function(name).map_err(cuda_err)
    }

    pub fn alloc<T: cudarc::driver::DeviceRepr>(&self, n: usize) -> Result<CudaSlice<T>> {
        // SAFETY: every caller's kernel writes all n elements before anything reads them.
        unsafe { self.stream.alloc::<T>(n) }.map_err(cuda_err)
    }

    pub fn round_to_storage(&self, x: &mut CudaSlice<f32>, storage: Storage) -> Result<()> {
        if storage == Storage::F32 {
            return Ok(());
        }
        let (n, kind) = (int(x.len()), storage as i32);
        let mut launch = self.stream.launch_builder(&self.round_to_storage);
        launch.arg(x).arg(&n).arg(&kind);
        // SAFETY: the kernel reads and writes x[0..n].
        unsafe { launch.launch(grid(n as usize)) }.map_err(cuda_err)?;
        Ok(())
    }

    pub fn to_half_bits(&self, x: &CudaSlice<f32>, storage: Storage) -> Result<CudaSlice<u16>> {
        let mut y = self.alloc::<u16>(x.len())?;
        let (n, kind) = (int(x.len()), storage as i32);
        let mut launch = self.stream.launch_builder(&self.to_half_bits);
        launch.arg(x).arg(&mut y).arg(&n).arg(&kind);
        // SAFETY: reads x[0..n], writes y[0..n].
        unsafe { launch.launch(grid(x.len())) }.map_err(cuda_err)?;
        Ok(y)
    }

    /// [batch][c][h][w] → [batch · oh · ow][c · k · k], zero padding.
    pub fn im2col(
        &self,
        x: &CudaSlice<f32>,
        batch: usize,
        [c, h, w]: [usize; 3],
        k: usize,
        pad: usize,
    ) -> Result<CudaSlice<f32>> {
        let (oh, ow) = (h + 2 * pad + 1 - k, w + 2 * pad + 1 - k);
        let total = batch * oh * ow * c * k * k;
        let mut cols = self.alloc::<f32>(total)?;
        let args = [batch, c, h, w, k, pad].map(int);
        let mut launch = self.stream.launch_builder(&self.im2col);
        launch.arg(x).arg(&mut cols);
        for a in &args {
            launch.arg(a);
        }
        // SAFETY: reads x[0..batch·c·h·w], writes cols[0..total].
        unsafe { launch.launch(grid(total)) }.map_err(cuda_err)?;
        Ok(cols)
    }

    /// y[img][r][p] = store(C[r][img · positions + p] + bias[r]); C in `c_storage`.
    #[allow(clippy::too_many_arguments)]
    pub fn add_bias_store<T>(
        &self,
        c: &CudaSlice<T>,
        c_storage: Storage,
        bias: &CudaSlice<f32>,
        batch: usize,
        rows: usize,
        positions: usize,
        storage: Storage,
    ) -> Result<CudaSlice<f32>> {
        let total = batch * rows * positions;
        let mut y = self.alloc::<f32>(total)?;
        let (ck, sk) = (c_storage as i32, storage as i32);
        let [b, r, p] = [batch, rows, positions].map(int);
        let mut launch = self.stream.launch_builder(&self.add_bias_store);
        launch
            .arg(c)
            .arg(&ck)
            .arg(bias)
            .arg(&mut y)
            .arg(&b)
            .arg(&r)
            .arg(&p)
            .arg(&sk);
        // SAFETY: reads c[0..total] and bias[0..rows], writes y[0..total].
        unsafe { launch.launch(grid(total)) }.map_err(cuda_err)?;
        Ok(y)
    }

    pub fn relu(&self, x: &mut CudaSlice<f32>) -> Result<()> {
        let n = int(x.len());
        let mut launch = self.stream.launch_builder(&self.relu);
        launch.arg(x).arg(&n);
        // SAFETY: reads and writes x[0..n].
        unsafe { launch.launch(grid(n as usize)) }.map_err(cuda_err)?;
        Ok(())
    }

    pub fn max_pool2(
        &self,
        x: &CudaSlice<f32>,
        batch: usize,
        [c, h, w]: [usize; 3],
    ) -> Result<CudaSlice<f32>> {
        let total = batch * c * (h / 2) * (w / 2);
        let mut y = self.alloc::<f32>(total)?;
        let args = [batch, c, h, w].map(int);
        let mut launch = self.stream.launch_builder(&self.max_pool2);
        launch.arg(x).arg(&mut y);
        for a in &args {
            launch.arg(a);
        }
        // SAFETY: reads x[0..batch·c·h·w], writes y[0..total].
        unsafe { launch.launch(grid(total)) }.map_err(cuda_err)?;
        Ok(y)
    }
}
