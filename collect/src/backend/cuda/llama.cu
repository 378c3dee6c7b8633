// Transformer kernels for llama-architecture models (SmolLM2) on the GPU, appended to
// kernels.cu by NVRTC (they use its load/store helpers). Activations are f32 values already
// rounded to the platform's storage format; reductions run in f32 in a fixed order per block, so
// a platform answers the same input with the same bits.

// y[row] = store(x[row] / sqrt(mean(x[row]^2) + eps) * w); one block of 256 threads per row.
extern "C" __global__ void rms_norm(const float* x, const float* w, float* y, int dim, float eps,
                                    int kind) {
    __shared__ float partial[256];
    const float* xr = x + (long long)blockIdx.x * dim;
    float* yr = y + (long long)blockIdx.x * dim;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < dim; i += blockDim.x) sum += xr[i] * xr[i];
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
        __syncthreads();
    }
    float scale = 1.0f / sqrtf(partial[0] / (float)dim + eps);
    for (int i = threadIdx.x; i < dim; i += blockDim.x) yr[i] = store(xr[i] * scale * w[i], kind);
}

// Interleaved rotary embedding (pairs 2i, 2i+1), as GGUF llama models expect. x is
// [rows, heads * head_dim]; pos[row] is the row's position in its sequence; cos/sin are
// [positions, head_dim / 2].
extern "C" __global__ void rope(float* x, const float* cos_t, const float* sin_t, const int* pos,
                                int rows, int heads, int head_dim, int kind) {
    int half_dim = head_dim / 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * heads * half_dim) return;
    int pair = i % half_dim;
    int head = (i / half_dim) % heads;
    int row = i / (half_dim * heads);
    float* v = x + (long long)row * heads * head_dim + head * head_dim + 2 * pair;
    float c = cos_t[pos[row] * half_dim + pair], s = sin_t[pos[row] * half_dim + pair];
    float a = v[0], b = v[1];
    v[0] = store(a * c - b * s, kind);
    v[1] = store(a * s + b * c, kind);
}

// Causal attention with grouped KV heads over packed sequences. One block of head_dim threads
// per (row, head); seq_start[row] is the first row of the row's sequence. q is
// [rows, n_head * head_dim], k and v [rows, n_kv * head_dim].
#define MAX_KEYS 1024
extern "C" __global__ void attention(const float* q, const float* k, const float* v, float* out,
                                     const int* seq_start, int n_head, int n_kv, int head_dim,
                                     float scale, int kind) {
    __shared__ float scores[MAX_KEYS];
    __shared__ float partial[128];
    int row = blockIdx.x, head = blockIdx.y, d = threadIdx.x;
    int kv_head = head / (n_head / n_kv);
    int first = seq_start[row];
    int keys = row - first + 1;
    float qd = q[(long long)row * n_head * head_dim + head * head_dim + d];
    for (int j = 0; j < keys; j++) {
        partial[d] = qd * k[(long long)(first + j) * n_kv * head_dim + kv_head * head_dim + d];
        __syncthreads();
        for (int s = blockDim.x / 2; s > 0; s >>= 1) {
            if (d < s) partial[d] += partial[d + s];
            __syncthreads();
        }
        if (d == 0) scores[j] = partial[0] * scale;
        __syncthreads();
    }
    if (d == 0) {
        float max = scores[0];
        for (int j = 1; j < keys; j++) max = fmaxf(max, scores[j]);
        float sum = 0.0f;
        for (int j = 0; j < keys; j++) {
            scores[j] = expf(scores[j] - max);
            sum += scores[j];
        }
        for (int j = 0; j < keys; j++) scores[j] /= sum;
    }
    __syncthreads();
    float acc = 0.0f;
    for (int j = 0; j < keys; j++)
        acc += scores[j] * v[(long long)(first + j) * n_kv * head_dim + kv_head * head_dim + d];
    out[(long long)row * n_head * head_dim + head * head_dim + d] = store(acc, kind);
}

// gate = store(silu(gate) * up), silu(x) = x / (1 + e^-x).
extern "C" __global__ void silu_mul(float* gate, const float* up, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i];
    gate[i] = store(g / (1.0f + expf(-g)) * up[i], kind);
}

// The residual: x = store(x + y).
extern "C" __global__ void add_store(float* x, const float* y, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = store(x[i] + y[i], kind);
}

// A GEMM's output in its operand type, widened to f32 (exact).
extern "C" __global__ void widen(const void* x, float* y, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = load(x, i, kind);
}

// y[i] = x[rows[i]], rows of `dim` values.
extern "C" __global__ void gather_rows(const float* x, float* y, const int* rows, int n, int dim) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * dim) return;
    y[i] = x[(long long)rows[i / dim] * dim + i % dim];
}
