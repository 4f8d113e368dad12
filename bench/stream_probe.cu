// The H200's streaming ceiling, without vdir: how fast one CTA per SM streams
// a large buffer with bulk copies (cp.async.bulk into a ring of shared-memory
// slots, one thread issuing, tiles of whole rows or strided row pieces, with
// and without an L2 evict_first policy, several CTAs per SM), against plain
// 16-byte loads from many CTAs (__ldcs). Each figure is the mean of a batch
// of 12 launches back to back (4 buffers in rotation, 448 MiB each, beyond
// L2), the median of 5 batches.
//
//   nvcc -arch=sm_90a -O3 -o stream_probe bench/stream_probe.cu && ./stream_probe
//   bash bench/run_all.sh probe
//
// docs/performance.md, round 25: bulk copies from one CTA per SM read 448 MiB
// at 4.42-4.47 TB/s, as plain loads from many CTAs do (4.41-4.44).
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cstring>

__device__ __forceinline__ unsigned sa(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

extern __shared__ __align__(128) unsigned char smem[];

// mode bit0: evict_first policy; bit1: contiguous tile blocks per CTA (else strided by grid)
__global__ void tma_stream(const char* src, size_t ntiles, unsigned rows, unsigned rowbytes, size_t pitch,
                           size_t tiles_per_rowblock, int ring, int mode, unsigned* out) {
  __shared__ __align__(8) uint64_t bars[16];
  if (threadIdx.x != 0) return;
  unsigned tile = rows * rowbytes;
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  for (int s = 0; s < ring; s++) asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(sa(&bars[s])));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  size_t first, step, last;
  if (mode & 2) { size_t per = (ntiles + gridDim.x - 1) / gridDim.x; first = blockIdx.x * per; step = 1; last = min(ntiles, first + per); }
  else { first = blockIdx.x; step = gridDim.x; last = ntiles; }
  auto issue = [&](int s, size_t t) {
    unsigned b = sa(&bars[s]);
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(b), "r"(tile) : "memory");
    size_t rb = t / tiles_per_rowblock, kc = t % tiles_per_rowblock;
    const char* base = src + rb * rows * pitch + kc * rowbytes;
    for (unsigned r = 0; r < rows; r++) {
      unsigned d = sa(smem + s * tile + r * rowbytes);
      if (mode & 1)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                     :: "r"(d), "l"(base + r * pitch), "r"(rowbytes), "r"(b), "l"(pol) : "memory");
      else
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(d), "l"(base + r * pitch), "r"(rowbytes), "r"(b) : "memory");
    }
  };
  int i = 0;
  for (int s = 0; s < ring && first + s * step < last; s++) issue(s, first + s * step);
  unsigned acc = 0;
  for (size_t t = first; t < last; t += step, i++) {
    int s = i % ring; unsigned ph = (i / ring) & 1;
    asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W%=; }"
                 :: "r"(sa(&bars[s])), "r"(ph) : "memory");
    acc ^= *(volatile unsigned*)(smem + s * tile);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    size_t nt = t + ring * step;
    if (nt < last) issue(s, nt);
  }
  if (acc == 0x12345678u) out[0] = acc;
}

__global__ void lsu_stream(const int4* __restrict__ src, size_t n16, unsigned* out) {
  unsigned acc = 0;
  size_t stride = (size_t)gridDim.x * blockDim.x;
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = __ldcs(src + i), b = __ldcs(src + i + stride), c = __ldcs(src + i + 2 * stride), d = __ldcs(src + i + 3 * stride);
    acc ^= a.x ^ b.y ^ c.z ^ d.w;
  }
  for (; i < n16; i += stride) { int4 a = __ldcs(src + i); acc ^= a.x; }
  if (acc == 0x12345678u) out[0] = acc;
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

int main(int argc, char** argv) {
  int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t W = 469762048;  // 28672 x 8192 bf16
  int nbuf = 4;
  char* buf; CK(cudaMalloc(&buf, W * nbuf)); CK(cudaMemset(buf, 1, W * nbuf));
  unsigned* out; CK(cudaMalloc(&out, 64));
  CK(cudaFuncSetAttribute(tma_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  struct Cfg { const char* name; size_t bytes; unsigned rows, rowbytes; size_t pitch; int ring, mode, ctas_per_sm; };
  std::vector<Cfg> cfgs;
  for (size_t bytes : {W, (size_t)134217728}) {
    size_t pitch = bytes == W ? 16384 : 16384;
    cfgs.push_back({"tma 8x8K rows ring2 ef strided", bytes, 8, 8192, pitch, 2, 1, 1});
    cfgs.push_back({"tma 8x8K rows ring3 ef strided", bytes, 8, 8192, pitch, 3, 1, 1});
    cfgs.push_back({"tma 8x8K rows ring2 ef contig", bytes, 8, 8192, pitch, 2, 3, 1});
    cfgs.push_back({"tma 8x8K rows ring3 ef contig", bytes, 8, 8192, pitch, 3, 3, 1});
    cfgs.push_back({"tma 8x8K rows ring2 noef strided", bytes, 8, 8192, pitch, 2, 0, 1});
    cfgs.push_back({"tma 1x64K linear ring2 ef strided", bytes, 1, 65536, 65536, 2, 1, 1});
    cfgs.push_back({"tma 1x64K linear ring3 ef strided", bytes, 1, 65536, 65536, 3, 1, 1});
    cfgs.push_back({"tma 1x32K linear ring4 ef strided", bytes, 1, 32768, 32768, 4, 1, 1});
    cfgs.push_back({"tma 1x16K linear ring8 ef strided", bytes, 1, 16384, 16384, 8, 1, 1});
    cfgs.push_back({"tma 1x32K linear ring3 ef 2cta/sm", bytes, 1, 32768, 32768, 3, 1, 2});
    cfgs.push_back({"tma 1x16K linear ring4 ef 4cta/sm", bytes, 1, 16384, 16384, 4, 1, 4});
    cfgs.push_back({"lsu 512thr x4/sm", bytes, 0, 0, 0, 0, 0, 4});
    cfgs.push_back({"lsu 256thr x8/sm", bytes, 0, 0, 0, 0, 0, 8});
    cfgs.push_back({"lsu 1024thr x1/sm", bytes, 0, 0, 0, 0, 0, 1});
  }
  for (auto& c : cfgs) {
    int reps = 5, batch = 12;
    std::vector<float> ts;
    for (int r = 0; r < reps + 1; r++) {
      cudaEventRecord(e0);
      for (int k = 0; k < batch; k++) {
      const char* src = buf + (k % nbuf) * W;
      if (c.rows == 0) {
        int thr = strstr(c.name, "512") ? 512 : strstr(c.name, "256") ? 256 : 1024;
        lsu_stream<<<sms * c.ctas_per_sm, thr>>>((const int4*)src, c.bytes / 16, out);
      } else {
        unsigned tile = c.rows * c.rowbytes;
        size_t tprb = c.pitch / c.rowbytes;
        size_t ntiles = c.bytes / tile;
        tma_stream<<<sms * c.ctas_per_sm, 32, tile * c.ring>>>(src, ntiles, c.rows, c.rowbytes, c.pitch, tprb, c.ring, c.mode, out);
      }
      }
      cudaEventRecord(e1); CK(cudaEventSynchronize(e1));
      float ms; cudaEventElapsedTime(&ms, e0, e1);
      if (r >= 1) ts.push_back(ms / batch);
    }
    CK(cudaGetLastError());
    std::sort(ts.begin(), ts.end());
    float med = ts[ts.size() / 2];
    printf("%-36s %4zu MiB  %8.2f us  %6.0f GB/s\n", c.name, c.bytes >> 20, med * 1e3, c.bytes / (med * 1e-3) / 1e9);
  }
  return 0;
}
