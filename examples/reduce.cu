// A block-wide sum: each warp reduces with shuffles, warp leaders meet in
// shared memory, the first warp reduces the partial sums.
// Try: warpdrf check --block-dim 256 examples/reduce.cu

__device__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffff, v, offset);
    }
    return v;
}

__global__ void block_sum(const float * x, float * out, int n) {
    __shared__ float partial[32];
    float v = 0.0f;
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
        v += x[i];
    }
    v = warp_sum(v);
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (lane == 0) {
        partial[warp] = v;
    }
    __syncthreads();
    if (warp == 0) {
        v = lane < blockDim.x / 32 ? partial[lane] : 0.0f;
        v = warp_sum(v);
        if (lane == 0) {
            atomicAdd(out, v);
        }
    }
}
