// What the standalone CUDA probes of bench/ share: error checks, the global timer, and a CTA's ring of
// bulk copies into shared memory (the way vdir's stream engine reads weight tiles).
#pragma once
#include <cuda_runtime.h>
#include <cstdint>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static constexpr unsigned TILE_BYTES = 64 * 1024;  // a weight tile
static constexpr int RING = 2;                      // tiles in flight, as vdir's stream ring

// Exit with a message when a CUDA call failed.
static void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// The median, over ``launches`` runs of ``launch`` (which resets what it needs and launches a kernel), of
// the word the kernel leaves at ``word``.
template <class Launch>
static double median_word(int launches, const unsigned* word, Launch launch) {
  std::vector<double> values;
  for (int i = 0; i < launches; i++) {
    launch();
    check(cudaGetLastError(), "launch");
    unsigned v = 0;
    check(cudaMemcpy(&v, word, sizeof v, cudaMemcpyDeviceToHost), "read back");
    values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  return values[launches / 2];
}

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

__device__ __forceinline__ uint64_t now_ns() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// mbarrier ``bar`` (a shared-memory address) made ready for one arrival per phase; after all of a CTA's
// inits, fence_bar_inits() before the first copy completes on them.
__device__ __forceinline__ void bar_init(unsigned bar) { asm volatile("mbarrier.init.shared.b64 [%0], 1;" :: "r"(bar)); }
__device__ __forceinline__ void fence_bar_inits() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// One bulk copy of ``bytes`` from global ``src`` to shared ``dst`` that completes the current phase of
// mbarrier ``bar`` (the thread arrives and expects the bytes); ``hinted``: with the L2 cache ``policy``.
__device__ __forceinline__ void bulk_copy(unsigned dst, const char* src, unsigned bytes, unsigned bar,
                                          bool hinted = false, uint64_t policy = 0) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
  if (hinted)
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy) : "memory");
  else
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

// Spin until the phase of mbarrier ``bar`` with parity ``parity`` has completed.
__device__ __forceinline__ void bar_wait(unsigned bar, unsigned parity) {
  asm volatile("{ .reg .pred p; W%=: mbarrier.try_wait.parity.shared.b64 p, [%0], %1; @!p bra W%=; }"
               :: "r"(bar), "r"(parity) : "memory");
}

// The RING tile slots, the dynamic shared memory of a probe that copies (RING * TILE_BYTES bytes).
extern __shared__ __align__(128) unsigned char tile_slots[];

// One thread's ring of RING bulk copies into tile_slots, each completing on its own mbarrier; copy()
// may be called again (the phases carry on).
struct TileRing {
  uint64_t* bars;  // RING mbarriers in static shared memory
  int* uses;       // RING completion counts (the next phase of each)

  __device__ void init() {
    for (int s = 0; s < RING; s++) {
      bar_init(smem_addr(&bars[s]));
      uses[s] = 0;
    }
    fence_bar_inits();
  }

  // Copy ``tiles`` tiles from ``src`` (TILE_BYTES apart), RING in flight; ``evict_first``: with that L2
  // policy. Returns when the last has landed.
  __device__ void copy(const char* src, int tiles, bool evict_first) {
    uint64_t pol;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
    auto issue = [&](int t) {
      int s = t % RING;
      bulk_copy(smem_addr(tile_slots + s * TILE_BYTES), src + size_t(t) * TILE_BYTES, TILE_BYTES, smem_addr(&bars[s]),
                evict_first, pol);
    };
    for (int t = 0; t < RING && t < tiles; t++) issue(t);
    for (int t = 0; t < tiles; t++) {
      int s = t % RING;
      unsigned parity = uses[s] & 1;
      uses[s]++;
      bar_wait(smem_addr(&bars[s]), parity);
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      if (t + RING < tiles) issue(t + RING);
    }
  }
};
