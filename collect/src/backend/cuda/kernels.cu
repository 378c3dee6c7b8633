// Elementwise kernels of the CUDA backend, compiled at run time by NVRTC. They include no
// headers (the machine may have no CUDA toolkit): conversions go through PTX `cvt` and bit moves.
// Every operation here is exact or a single correctly rounded conversion, so the GEMMs are the
// only place where a GPU's arithmetic choices show in the output bits.

#define STORE_F32 0
#define STORE_F16 1
#define STORE_BF16 2

__device__ __forceinline__ unsigned int f32_bits(float f) {
    unsigned int u;
    asm("mov.b32 %0, %1;" : "=r"(u) : "f"(f));
    return u;
}

__device__ __forceinline__ float bits_f32(unsigned int u) {
    float f;
    asm("mov.b32 %0, %1;" : "=f"(f) : "r"(u));
    return f;
}

__device__ __forceinline__ unsigned short f32_to_f16(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

__device__ __forceinline__ float f16_to_f32(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// Round to nearest even, NaN kept quiet: as the `half` crate does on the host.
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
    unsigned int u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
    return bits_f32(((unsigned int)h) << 16);
}

__device__ __forceinline__ float load(const void* p, int i, int kind) {
    if (kind == STORE_F16) return f16_to_f32(((const unsigned short*)p)[i]);
    if (kind == STORE_BF16) return bf16_to_f32(((const unsigned short*)p)[i]);
    return ((const float*)p)[i];
}

// The value as the platform stores it, kept in f32.
__device__ __forceinline__ float store(float x, int kind) {
    if (kind == STORE_F16) return f16_to_f32(f32_to_f16(x));
    if (kind == STORE_BF16) return bf16_to_f32(f32_to_bf16(x));
    return x;
}

extern "C" __global__ void round_to_storage(float* x, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = store(x[i], kind);
}

// f32 values to the 16-bit operand type of a half-precision GEMM.
extern "C" __global__ void to_half_bits(const float* x, unsigned short* y, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = kind == STORE_BF16 ? f32_to_bf16(x[i]) : f32_to_f16(x[i]);
}

// cols[(img * oh * ow + p) * (c * k * k) + (ch * k + ky) * k + kx], zero outside the image.
extern "C" __global__ void im2col(const float* x, float* cols, int batch, int c, int h, int w,
                                  int k, int pad) {
    int oh = h + 2 * pad + 1 - k, ow = w + 2 * pad + 1 - k;
    int patch = c * k * k;
    long long total = (long long)batch * oh * ow * patch;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= total) return;
    int col = (int)(i % patch);
    long long row = i / patch;
    int p = (int)(row % (oh * ow));
    int img = (int)(row / (oh * ow));
    int kx = col % k, ky = (col / k) % k, ch = col / (k * k);
    int y = p / ow + ky - pad, xx = p % ow + kx - pad;
    bool inside = y >= 0 && xx >= 0 && y < h && xx < w;
    cols[i] = inside ? x[(long long)img * c * h * w + ch * h * w + y * w + xx] : 0.0f;
}

// GEMM output C is row-major [rows, batch * positions] in the GEMM's output type; y becomes
// [batch][rows][positions] = store(C + bias), the layout of the next layer's input.
extern "C" __global__ void add_bias_store(const void* c, int c_kind, const float* bias, float* y,
                                          int batch, int rows, int positions, int store_kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int n = batch * rows * positions;
    if (i >= n) return;
    int p = i % positions;
    int r = (i / positions) % rows;
    int img = i / (positions * rows);
    float acc = load(c, r * batch * positions + img * positions + p, c_kind);
    y[i] = store(acc + bias[r], store_kind);
}

extern "C" __global__ void relu(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = fmaxf(x[i], 0.0f);
}

extern "C" __global__ void max_pool2(const float* x, float* y, int batch, int c, int h, int w) {
    int oh = h / 2, ow = w / 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= batch * c * oh * ow) return;
    int ox = i % ow, oy = (i / ow) % oh, plane = i / (ow * oh);
    const float* s = x + (long long)plane * h * w + 2 * oy * w + 2 * ox;
    y[i] = fmaxf(fmaxf(s[0], s[1]), fmaxf(s[w], s[w + 1]));
}
