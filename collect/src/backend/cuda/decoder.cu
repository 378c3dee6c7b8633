// Transformer kernels for decoder language models of every dense family on the GPU, appended to
// kernels.cu by NVRTC (they use its load/store helpers). Activations are f32 values already
// rounded to the platform's storage format; reductions run in f32 in a fixed order per block, so
// a platform answers the same input with the same bits.

// y[row] = store(x[row] / sqrt(mean(x[row]^2) + eps) * w); one block of 256 threads per row of
// `dim` values (a whole hidden row, or one head's queries or keys for the q/k norms).
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

// The rotary embedding on Hugging Face's pairs (i, i + head_dim / 2). x is
// [rows, heads * head_dim]; pos[row] is the row's position in its sequence; cos/sin are
// [positions, head_dim / 2] (a layer type's own table).
extern "C" __global__ void rope(float* x, const float* cos_t, const float* sin_t, const int* pos,
                                int rows, int heads, int head_dim, int kind) {
    int half_dim = head_dim / 2;
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= rows * heads * half_dim) return;
    int pair = i % half_dim;
    int head = (i / half_dim) % heads;
    int row = i / (half_dim * heads);
    float* v = x + (long long)row * heads * head_dim + head * head_dim + pair;
    float c = cos_t[pos[row] * half_dim + pair], s = sin_t[pos[row] * half_dim + pair];
    float a = v[0], b = v[half_dim];
    v[0] = store(a * c - b * s, kind);
    v[half_dim] = store(b * c + a * s, kind);
}

// Causal attention with grouped KV heads over packed sequences, over the last `window`
// positions where window > 0. One block per (row, head) of `threads` threads (the power of two
// at or above head_dim, at most 256); seq_start[row] is the first row of the row's sequence.
// q is [rows, n_head * head_dim], k and v [rows, n_kv * head_dim].
#define MAX_KEYS 1024
extern "C" __global__ void attention(const float* q, const float* k, const float* v, float* out,
                                     const int* seq_start, int n_head, int n_kv, int head_dim,
                                     float scale, int window, int kind) {
    __shared__ float scores[MAX_KEYS];
    __shared__ float partial[256];
    int row = blockIdx.x, head = blockIdx.y, d = threadIdx.x;
    bool lane = d < head_dim;
    int kv_head = head / (n_head / n_kv);
    int first = seq_start[row];
    if (window > 0 && row - window + 1 > first) first = row - window + 1;
    int keys = row - first + 1;
    float qd = lane ? q[(long long)row * n_head * head_dim + head * head_dim + d] : 0.0f;
    for (int j = 0; j < keys; j++) {
        partial[d] =
            lane ? qd * k[(long long)(first + j) * n_kv * head_dim + kv_head * head_dim + d]
                 : 0.0f;
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
    if (!lane) return;
    float acc = 0.0f;
    for (int j = 0; j < keys; j++)
        acc += scores[j] * v[(long long)(first + j) * n_kv * head_dim + kv_head * head_dim + d];
    out[(long long)row * n_head * head_dim + head * head_dim + d] = store(acc, kind);
}

#define ACT_SILU 0
#define ACT_GELU_TANH 1

// gate = store(act(gate) * up): SiLU x / (1 + e^-x), or GELU's tanh approximation.
extern "C" __global__ void gated(float* gate, const float* up, int n, int act, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float g = gate[i], a;
    if (act == ACT_GELU_TANH) {
        const float beta = 0.7978845608028654f;  // sqrt(2 / pi)
        a = 0.5f * g * (1.0f + tanhf(beta * (g + 0.044715f * g * g * g)));
    } else {
        a = g / (1.0f + expf(-g));
    }
    gate[i] = store(a * up[i], kind);
}

// The residual: x = store(x + y).
extern "C" __global__ void add_store(float* x, const float* y, int n, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = store(x[i] + y[i], kind);
}

// A bias on every row of `cols` values: x = store(x + b).
extern "C" __global__ void add_row_bias(float* x, const float* b, int n, int cols, int kind) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = store(x[i] + b[i % cols], kind);
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
