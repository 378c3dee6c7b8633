//! One `cublasGemmEx` per layer, at the platform's precision. cuBLAS chooses the kernel itself
//! (tile shape, split-K, tensor-core path), from the GPU and the problem shape: that choice is
//! what makes batch size a platform dimension on a GPU.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::cublas::{result as cublas_result, sys as cublas_sys, CudaBlas};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use half::f16;
use hspi_datasets::{Accumulator, NumericFormat};

use super::cuda_err;
use super::kernels::Storage;
use crate::error::Result;

/// A matrix on the device in a GEMM operand type.
pub enum DeviceMatrix {
    F32(CudaSlice<f32>),
    /// f16 or bf16 bit patterns.
    Half(CudaSlice<u16>),
}

pub struct Gemm {
    pub stream: Arc<CudaStream>,
    pub blas: CudaBlas,
    pub format: NumericFormat,
    pub accumulator: Accumulator,
}

impl Gemm {
    /// How activations are stored between layers at this precision.
    pub fn storage(&self) -> Storage {
        match self.format {
            NumericFormat::F16 => Storage::F16,
            NumericFormat::Bf16 => Storage::Bf16,
            _ => Storage::F32,
        }
    }

    /// out (row-major [rows, positions], in the operands' type) = W[rows, k] · X[positions, k]ᵀ.
    /// In column-major terms C (positions × rows) = op_T(X) · W.
    pub fn run(
        &self,
        weight: &DeviceMatrix,
        x: &DeviceMatrix,
        rows: usize,
        positions: usize,
        k: usize,
    ) -> Result<DeviceMatrix> {
        Ok(match (weight, x) {
            (DeviceMatrix::F32(w), DeviceMatrix::F32(x)) => {
                DeviceMatrix::F32(self.gemm_ex(w, x, rows, positions, k)?)
            }
            (DeviceMatrix::Half(w), DeviceMatrix::Half(x)) => {
                DeviceMatrix::Half(self.gemm_ex(w, x, rows, positions, k)?)
            }
            _ => unreachable!("weights and activations share the platform's operand type"),
        })
    }

    /// y (row-major [rows, out], in the operands' type) = X[rows, k] · W[out, k]ᵀ, a linear
    /// layer's layout. In column-major terms C (out × rows) = op_T(W) · X.
    pub fn linear(
        &self,
        weight: &DeviceMatrix,
        x: &DeviceMatrix,
        out: usize,
        rows: usize,
        k: usize,
    ) -> Result<DeviceMatrix> {
        // The same product as `run` with the operands' roles swapped.
        self.run(x, weight, rows, out, k)
    }

    fn gemm_ex<T: cudarc::driver::DeviceRepr>(
        &self,
        w: &CudaSlice<T>,
        x: &CudaSlice<T>,
        rows: usize,
        positions: usize,
        k: usize,
    ) -> Result<CudaSlice<T>> {
        use cublas_sys::{
            cublasComputeType_t as Compute, cublasGemmAlgo_t, cublasOperation_t as Op,
            cudaDataType as Ty,
        };
        let ty = match self.storage() {
            Storage::F32 => Ty::CUDA_R_32F,
            Storage::F16 => Ty::CUDA_R_16F,
            Storage::Bf16 => Ty::CUDA_R_16BF,
        };
        let compute = match (self.format, self.accumulator) {
            (NumericFormat::Tf32, _) => Compute::CUBLAS_COMPUTE_32F_FAST_TF32,
            (_, Accumulator::F16) => Compute::CUBLAS_COMPUTE_16F,
            _ => Compute::CUBLAS_COMPUTE_32F,
        };
        // Scalars come in the compute type: f16 for an f16 accumulator, else f32.
        let (one32, zero32) = (1f32, 0f32);
        let (one16, zero16) = (f16::ONE, f16::ZERO);
        let (alpha, beta) = if self.accumulator == Accumulator::F16 {
            (
                &one16 as *const f16 as *const c_void,
                &zero16 as *const f16 as *const c_void,
            )
        } else {
            (
                &one32 as *const f32 as *const c_void,
                &zero32 as *const f32 as *const c_void,
            )
        };
        let (m, n, kk) = (positions as i32, rows as i32, k as i32);
        // SAFETY: cuBLAS writes every element of C (beta is zero).
        let mut c = unsafe { self.stream.alloc::<T>(positions * rows) }.map_err(cuda_err)?;
        {
            let (a, _ga) = x.device_ptr(&self.stream);
            let (b, _gb) = w.device_ptr(&self.stream);
            let (cp, _gc) = c.device_ptr_mut(&self.stream);
            // SAFETY: the buffers hold positions·k, rows·k and positions·rows elements of `ty`;
            // alpha and beta point at live scalars of the compute type.
            unsafe {
                cublas_result::gemm_ex(
                    *self.blas.handle(),
                    Op::CUBLAS_OP_T,
                    Op::CUBLAS_OP_N,
                    m,
                    n,
                    kk,
                    alpha,
                    a as *const c_void,
                    ty,
                    kk,
                    b as *const c_void,
                    ty,
                    kk,
                    beta,
                    cp as *mut c_void,
                    ty,
                    m,
                    compute,
                    cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
                )
            }
            .map_err(cuda_err)?;
        }
        Ok(c)
    }
}
