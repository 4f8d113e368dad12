// A hand-off between two SMs through global memory against one through a cluster's distributed shared
// memory, on the H200, without vdir: the round trip, with the HBM idle and with other SMs streaming.
//
// The grid has one CTA per SM in clusters of two. CTAs 0 and 1 (one cluster) pass a token back and
// forth ``TRIPS`` times, either through a global word (st.release.gpu, ld.acquire.gpu polls: a vdir
// counter release and its wait) or through each other's shared memory (st.release.cluster to the
// other CTA's word, mapped with mapa; ld.acquire.cluster polls of one's own). The other CTAs idle or
// copy 64 KiB tiles into their shared memory (bulk copies, two in flight), as a streaming weight
// engine does. The mean round trip, the median of 7 launches.
//
//   nvcc -arch=sm_90a -O3 -o cluster_handoff_probe bench/cluster_handoff_probe.cu && ./cluster_handoff_probe
//   bash bench/run_all.sh clusterprobe
#include <algorithm>
#include <vector>

#include "probe_util.cuh"

static constexpr int LAUNCHES = 7;
static constexpr int TRIPS = 5;  // about as long as the other CTAs' traffic lasts

// via 0: the global word ``token``; via 1: the cluster's shared memory.
__global__ void __cluster_dims__(2, 1, 1)
handoff(const char* region, int tiles, int via, unsigned* token, unsigned* trip_ns) {
  __shared__ __align__(8) unsigned mailbox;
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) mailbox = 0;
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
  if (threadIdx.x != 0) return;
  if (blockIdx.x >= 2) {
    __shared__ __align__(8) uint64_t bars[RING];
    __shared__ int uses[RING];
    TileRing ring{bars, uses};
    ring.init();
    if (tiles) ring.copy(region + size_t(blockIdx.x) * tiles * TILE_BYTES, tiles, true);
  } else {
    unsigned other;  // the other CTA's mailbox, in the cluster's shared window
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(other) : "r"(smem_addr(&mailbox)), "r"(rank ^ 1));
    uint64_t t0 = now_ns();
    for (unsigned i = 0; i < TRIPS; i++) {
      unsigned want = 2 * i + rank, seen;  // CTA 0 sees 2i and sends 2i + 1; CTA 1 sees 2i + 1, sends 2i + 2
      if (via == 0) {
        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(token) : "memory");
        while (seen != want);
        asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(token), "r"(want + 1) : "memory");
      } else {
        if (want != 0) {
          do asm volatile("ld.acquire.cluster.shared::cta.u32 %0, [%1];" : "=r"(seen) : "r"(smem_addr(&mailbox)) : "memory");
          while (seen != want);
        }
        asm volatile("st.release.cluster.shared::cluster.u32 [%0], %1;" :: "r"(other), "r"(want + 1) : "memory");
      }
    }
    if (rank == 0) trip_ns[0] = unsigned((now_ns() - t0) / TRIPS);
  }
  // neither CTA of a cluster leaves while the other may still write to its shared memory
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

int main() {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  int grid = sms - sms % 2;
  const int max_tiles = 8;
  char* region = nullptr;
  unsigned *token = nullptr, *trip_ns = nullptr;
  check(cudaMalloc(&region, size_t(grid) * max_tiles * TILE_BYTES), "region");
  check(cudaMalloc(&token, 64), "token");
  check(cudaMalloc(&trip_ns, 64), "times");
  int smem = RING * TILE_BYTES;
  check(cudaFuncSetAttribute(handoff, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  std::printf("%d CTAs in clusters of 2; CTAs 0 and 1 pass a token %d times while the other %d ...\n", grid, TRIPS,
              grid - 2);
  for (int tiles : {0, 4, 8}) {
    for (int via : {0, 1}) {
      std::vector<double> trip;
      for (int launch = 0; launch < LAUNCHES; launch++) {
        check(cudaMemset(token, 0, 64), "token reset");
        handoff<<<grid, 32, smem>>>(region, tiles, via, token, trip_ns);
        check(cudaGetLastError(), "launch");
        unsigned ns = 0;
        check(cudaMemcpy(&ns, trip_ns, sizeof ns, cudaMemcpyDeviceToHost), "read back");
        trip.push_back(ns);
      }
      std::sort(trip.begin(), trip.end());
      std::printf("  %-34s through %-22s %6.0f ns per round trip\n",
                  tiles ? (tiles == 4 ? "copy 4 tiles of 64 KiB each," : "copy 8 tiles of 64 KiB each,") : "idle,",
                  via ? "the cluster's smem:" : "global memory:", trip[LAUNCHES / 2]);
    }
  }
  return 0;
}
