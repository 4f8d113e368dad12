// Does an L2 prefetch serve the bulk copies that follow it, on the H200, without vdir?
//
// One CTA per SM asks L2 for its share of a weight region
// (cp.async.bulk.prefetch.L2, with no cache hint or with an evict_last /
// evict_normal policy), waits a while (the decode step's attention chain,
// during which the HBM idles), then copies the same bytes into shared memory
// with bulk copies (64 KiB tiles, two in flight, with or without the stream
// engine's evict_first policy), and times that copy. Against it: the copy with
// no prefetch (from the HBM), and the copy of bytes that an earlier copy of the
// same launch already read (the best L2 can do). Before each launch 512 MiB
// are read (or written: L2 then holds dirty lines to write back), so nothing
// of the region is in L2 unless the launch put it there. Each figure is the
// median of 7 launches: the slowest CTA's copy time and the region's bytes
// over it.
//
// Second table: what the traffic does to a hand-off between SMs. CTAs 0 and 1
// pass a token back and forth through global memory (st.release.gpu /
// ld.acquire.gpu polls, as a counter release and its wait) while the other
// CTAs idle, ask L2 for their tiles, or copy them; the mean round trip.
//
//   nvcc -arch=sm_90a -O3 -o l2_prefetch_probe bench/l2_prefetch_probe.cu && ./l2_prefetch_probe
//   bash bench/run_all.sh l2probe
//
// docs/performance.md, round 29, has what it measured.
#include <algorithm>
#include <vector>

#include "probe_util.cuh"

static constexpr int LAUNCHES = 7;
static constexpr size_t FLUSH_BYTES = size_t(512) << 20;

enum Prefetch { NO_PREFETCH = 0, PREFETCH_PLAIN = 1, PREFETCH_EVICT_LAST = 2, PREFETCH_EVICT_NORMAL = 3,
                COPY_TWICE = 4 };

__global__ void prefetch_then_copy(const char* region, int tiles, int prefetch, bool evict_first,
                                   unsigned delay_ns, unsigned* copy_ns) {
  __shared__ __align__(8) uint64_t bars[RING];
  __shared__ int uses[RING];
  if (threadIdx.x != 0) return;
  uint64_t start = now_ns();
  TileRing ring{bars, uses};
  ring.init();
  const char* mine = region + size_t(blockIdx.x) * tiles * TILE_BYTES;
  uint64_t pol = 0;
  if (prefetch == PREFETCH_EVICT_LAST)
    asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(pol));
  if (prefetch == PREFETCH_EVICT_NORMAL)
    asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(pol));
  for (int t = 0; t < tiles; t++) {
    const char* g = mine + size_t(t) * TILE_BYTES;
    if (prefetch == PREFETCH_PLAIN)
      asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(g), "r"(TILE_BYTES) : "memory");
    else if (prefetch == PREFETCH_EVICT_LAST || prefetch == PREFETCH_EVICT_NORMAL)
      asm volatile("cp.async.bulk.prefetch.L2.global.L2::cache_hint [%0], %1, %2;"
                   :: "l"(g), "r"(TILE_BYTES), "l"(pol) : "memory");
  }
  if (prefetch == COPY_TWICE) ring.copy(mine, tiles, false);
  while (now_ns() - start < delay_ns) {
  }
  uint64_t t0 = now_ns();
  ring.copy(mine, tiles, evict_first);
  copy_ns[blockIdx.x] = unsigned(now_ns() - t0);
}

// CTAs 0 and 1: ``trips`` round trips of a token through ``token``; the mean round trip in ns goes to
// trip_ns[0]. Every ``every``-th other CTA: nothing (traffic 0), prefetch.L2 of its tiles (1), or bulk
// copies of them (2).
__global__ void handoff_under_traffic(const char* region, int tiles, int traffic, int every, int trips,
                                      unsigned* token, unsigned* trip_ns) {
  __shared__ __align__(8) uint64_t bars[RING];
  __shared__ int uses[RING];
  if (threadIdx.x != 0) return;
  if (blockIdx.x >= 2) {
    if (blockIdx.x % every != 0) return;
    const char* mine = region + size_t(blockIdx.x) * tiles * TILE_BYTES;
    if (traffic == 1) {
      for (int t = 0; t < tiles; t++)
        asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" :: "l"(mine + size_t(t) * TILE_BYTES),
                     "r"(TILE_BYTES) : "memory");
    } else if (traffic == 2) {
      TileRing ring{bars, uses};
      ring.init();
      ring.copy(mine, tiles, true);
    }
    return;
  }
  unsigned me = blockIdx.x;
  uint64_t t0 = now_ns();
  for (unsigned i = 0; i < unsigned(trips); i++) {
    unsigned want = 2 * i + me;  // CTA 0 sees 2i, sends 2i + 1; CTA 1 sees 2i + 1, sends 2i + 2
    unsigned seen;
    do {
      asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(token) : "memory");
    } while (seen != want);
    asm volatile("st.release.gpu.global.u32 [%0], %1;" :: "l"(token), "r"(want + 1) : "memory");
  }
  if (me == 0) trip_ns[0] = unsigned((now_ns() - t0) / trips);
}

// Reads ``n16`` 16-byte words through L2 (the flush that leaves L2 holding clean lines).
__global__ void read_through(const int4* __restrict__ src, size_t n16, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n16; i += size_t(gridDim.x) * blockDim.x)
    acc ^= __ldcg(src + i).x;
  if (acc == 0x9e3779b9u) sink[0] = acc;
}

// Device buffers the two tables share.
struct Buffers {
  int sms;
  char* region;       // every CTA's tiles, TILE_BYTES each
  char* flush;        // FLUSH_BYTES read or written before a launch
  unsigned* times;    // one word per CTA
  std::vector<unsigned> host;
};

// Before a launch: FLUSH_BYTES read through L2 (clean lines) or written (dirty ones).
static void flush_l2(const Buffers& b, bool write, int launch) {
  if (write)
    check(cudaMemset(b.flush, launch & 0xff, FLUSH_BYTES), "flush");
  else
    read_through<<<4 * b.sms, 512>>>(reinterpret_cast<const int4*>(b.flush), FLUSH_BYTES / 16, b.times);
}

// First table: the slowest CTA's copy after each kind of prefetch.
static void copy_table(Buffers& b, int smem) {
  std::printf("%-34s %6s %9s %10s %12s %12s\n", "before the copy", "tiles", "wait us", "copy hint",
              "slowest us", "GB/s");
  struct Case { const char* name; int prefetch; };
  const Case cases[] = {{"nothing (from the HBM)", NO_PREFETCH}, {"prefetch.L2, no hint", PREFETCH_PLAIN},
                        {"prefetch.L2, evict_last", PREFETCH_EVICT_LAST},
                        {"prefetch.L2, evict_normal", PREFETCH_EVICT_NORMAL},
                        {"the same copy (L2 hits)", COPY_TWICE}};
  for (bool write_flush : {false, true}) {
    std::printf("-- before each launch: %s 512 MiB\n", write_flush ? "write" : "read");
    for (int tiles : {2, 4})
      for (unsigned delay_us : {0u, 20u, 40u})
        for (const Case& c : cases)
          for (bool evict_first : {false, true}) {
            std::vector<double> slowest;
            for (int launch = 0; launch < LAUNCHES; launch++) {
              flush_l2(b, write_flush, launch);
              prefetch_then_copy<<<b.sms, 32, smem>>>(b.region, tiles, c.prefetch, evict_first, delay_us * 1000,
                                                      b.times);
              check(cudaGetLastError(), "launch");
              check(cudaMemcpy(b.host.data(), b.times, b.sms * sizeof(unsigned), cudaMemcpyDeviceToHost),
                    "read back");
              slowest.push_back(*std::max_element(b.host.begin(), b.host.end()) / 1000.0);
            }
            std::sort(slowest.begin(), slowest.end());
            double us = slowest[LAUNCHES / 2];
            double bytes = double(b.sms) * tiles * TILE_BYTES;
            std::printf("%-34s %6d %9u %10s %12.2f %12.0f\n", c.name, tiles, delay_us,
                        evict_first ? "evict_first" : "none", us, bytes / us / 1e3);
          }
  }
}

// Second table: a hand-off's round trip while other CTAs prefetch or copy.
static void handoff_table(Buffers& b, int smem) {
  unsigned* token = nullptr;
  check(cudaMalloc(&token, 64), "token");
  const int trips = 5;  // about as long as the traffic lasts
  std::printf("\nhand-off round trip between two SMs while the other %d CTAs ...\n", b.sms - 2);
  const char* traffic_names[] = {"idle", "ask L2 for their tiles", "copy their tiles"};
  struct Load { int tiles, traffic, every; };
  const Load loads[] = {{4, 0, 1}, {4, 1, 1}, {4, 2, 1}, {8, 1, 1}, {8, 2, 1}, {8, 2, 2}, {8, 2, 4}, {8, 2, 8},
                        {8, 2, 16}};
  for (const Load& l : loads) {
    int busy = 0;
    for (int cta = 2; cta < b.sms; cta++) busy += cta % l.every == 0;
    int launch = 0;
    double trip = median_word(LAUNCHES, b.times, [&] {
      flush_l2(b, false, launch++);
      check(cudaMemset(token, 0, 64), "token reset");
      handoff_under_traffic<<<b.sms, 32, smem>>>(b.region, l.tiles, l.traffic, l.every, trips, token, b.times);
    });
    std::printf("  %-24s (every %2d: %3d CTAs, %d tiles of 64 KiB each): %.0f ns per round trip (median of "
                "%d launches)\n", traffic_names[l.traffic], l.every, l.traffic ? busy : 0, l.tiles, trip, LAUNCHES);
  }
}

int main() {
  Buffers b{};
  check(cudaDeviceGetAttribute(&b.sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  int l2 = 0;
  check(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0), "L2 size");
  const int max_tiles = 8;
  size_t region_bytes = size_t(b.sms) * max_tiles * TILE_BYTES;
  check(cudaMalloc(&b.region, region_bytes), "region");
  check(cudaMalloc(&b.flush, FLUSH_BYTES), "flush buffer");
  check(cudaMalloc(&b.times, b.sms * sizeof(unsigned)), "times");
  check(cudaMemset(b.region, 0x3c, region_bytes), "region fill");
  check(cudaMemset(b.flush, 1, FLUSH_BYTES), "flush fill");
  b.host.resize(b.sms);
  int smem = RING * TILE_BYTES;
  check(cudaFuncSetAttribute(prefetch_then_copy, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  check(cudaFuncSetAttribute(handoff_under_traffic, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  std::printf("%d SMs, L2 %d MiB; one CTA per SM copies its tiles of 64 KiB (two in flight) after a wait\n",
              b.sms, l2 >> 20);
  copy_table(b, smem);
  handoff_table(b, smem);
  return 0;
}
