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
// Second table: a row handed over as vdir hands rows over, and as a cluster could. Through global
// memory: the sender's bulk store of the row from its shared memory, its completion, a proxy fence and
// a counter release (red.release.gpu); the receiver's acquire polls of the counter, a proxy fence and a
// bulk load of the row into its shared memory, waited on an mbarrier. Through the cluster: one bulk
// copy from the sender's shared memory into the receiver's, completing on the receiver's mbarrier.
// Optionally the two CTAs' own second warps stream weight tiles meanwhile (a release waits for its
// SM's copies in flight: docs/performance.md, round 8). The mean time of one hand-off (half a round
// trip).
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

static constexpr unsigned ROW_BYTES = 4096;  // a 2048-wide bf16 row: a residual, q or activation row
static constexpr int ROW_TRIPS = 8;

// The second table's kernel: 64 threads a CTA. CTAs 0 and 1: warp 0 hands a row back and forth
// ROW_TRIPS times (via 0: global memory, ``rows`` and the counters ``counters[0..1]``; via 1: the
// cluster), warp 1 streams ``own`` tiles when ``own`` > 0. The other CTAs' warp 0 streams ``tiles``.
__global__ void __cluster_dims__(2, 1, 1)
row_handoff(const char* region, int tiles, int own, int via, char* rows, unsigned* counters, unsigned* trip_ns) {
  __shared__ __align__(128) unsigned char row[2][ROW_BYTES];  // [0]: sent from, [1]: received into
  __shared__ __align__(8) uint64_t got;                        // the received row's mbarrier
  __shared__ __align__(8) uint64_t bars[RING];
  __shared__ int uses[RING];
  unsigned rank, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  if (threadIdx.x == 0) {
    bar_init(smem_addr(&got));
    fence_bar_inits();
  }
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
  const char* mine = region + size_t(blockIdx.x) * 16 * TILE_BYTES;
  bool streams = blockIdx.x >= 2 ? warp == 0 && tiles > 0 : warp == 1 && own > 0;
  if (streams && lane == 0) {
    TileRing ring{bars, uses};
    ring.init();
    ring.copy(mine, blockIdx.x >= 2 ? tiles : own, true);
  }
  if (blockIdx.x < 2 && warp == 0 && lane == 0) {
    unsigned peer_row, peer_got;  // the other CTA's receive buffer and mbarrier, in the cluster's window
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer_row) : "r"(smem_addr(row[1])), "r"(rank ^ 1));
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(peer_got) : "r"(smem_addr(&got)), "r"(rank ^ 1));
    char* to_peer = rows + (rank ^ 1) * ROW_BYTES;  // global: the row this CTA sends lands here
    char* to_me = rows + rank * ROW_BYTES;
    unsigned received = 0;
    auto send = [&]() {
      if (via == 0) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                     :: "l"(to_peer), "r"(smem_addr(row[0])), "r"(ROW_BYTES) : "memory");
        asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;" ::: "memory");
        asm volatile("fence.proxy.async.global;" ::: "memory");
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(counters + (rank ^ 1)) : "memory");
      } else {
        asm volatile("cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(peer_row), "r"(smem_addr(row[0])), "r"(ROW_BYTES), "r"(peer_got) : "memory");
      }
    };
    auto receive = [&]() {
      unsigned b = smem_addr(&got);
      asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" :: "r"(b), "r"(ROW_BYTES) : "memory");
      if (via == 0) {
        unsigned seen;
        do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counters + rank) : "memory");
        while (seen <= received);
        asm volatile("fence.proxy.async.global;" ::: "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem_addr(row[1])), "l"(to_me), "r"(ROW_BYTES), "r"(b) : "memory");
      }
      bar_wait(b, received & 1);
      received++;
    };
    uint64_t t0 = now_ns();
    for (int i = 0; i < ROW_TRIPS; i++) {
      if (rank == 0) {
        send();
        receive();
      } else {
        receive();
        send();
      }
    }
    if (rank == 0) trip_ns[0] = unsigned((now_ns() - t0) / (2 * ROW_TRIPS));
  }
  asm volatile("barrier.cluster.arrive.release;\n\tbarrier.cluster.wait.acquire;" ::: "memory");
}

static void row_table(int grid, const char* region, int smem) {
  char* rows = nullptr;
  unsigned *counters = nullptr, *ns = nullptr;
  check(cudaMalloc(&rows, 2 * ROW_BYTES), "rows");
  check(cudaMalloc(&counters, 64), "counters");
  check(cudaMalloc(&ns, 64), "times");
  check(cudaFuncSetAttribute(row_handoff, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  std::printf("\na %u-byte row handed between CTAs 0 and 1 (%d round trips), mean time of one hand-off:\n",
              ROW_BYTES, ROW_TRIPS);
  for (int tiles : {0, 8})
    for (int own : {0, 16})
      for (int via : {0, 1}) {
        double one = median_word(LAUNCHES, ns, [&] {
          check(cudaMemset(counters, 0, 64), "counters reset");
          row_handoff<<<grid, 64, smem>>>(region, tiles, own, via, rows, counters, ns);
        });
        std::printf("  others %-22s own tiles %-9s through %-16s %6.0f ns\n",
                    tiles ? "stream 8 tiles each," : "idle,", own ? "streaming," : "none,",
                    via ? "the cluster:" : "global memory:", one);
      }
}

int main() {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  int grid = sms - sms % 2;
  const int max_tiles = 16;
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
      double trip = median_word(LAUNCHES, trip_ns, [&] {
        check(cudaMemset(token, 0, 64), "token reset");
        handoff<<<grid, 32, smem>>>(region, tiles, via, token, trip_ns);
      });
      std::printf("  %-34s through %-22s %6.0f ns per round trip\n",
                  tiles ? (tiles == 4 ? "copy 4 tiles of 64 KiB each," : "copy 8 tiles of 64 KiB each,") : "idle,",
                  via ? "the cluster's smem:" : "global memory:", trip);
    }
  }
  row_table(grid, region, smem);
  return 0;
}
