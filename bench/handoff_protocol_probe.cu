// What one hand-off of a row among all SMs costs, by the protocol that carries it, on the H200,
// without vdir: the decode step's chain is a sequence of such hand-offs (each SM computes a chunk of a
// row, every SM needs the whole row before its next step).
//
// One CTA per SM. In each of ROUNDS rounds, PRODUCERS CTAs each write their chunk of a fresh row (row
// bytes / PRODUCERS), and every CTA waits until it holds the whole row in its shared memory, checks its
// words, and goes on to the next round. CTA 0 reports the mean time of a round over the last
// ROUNDS - WARMUP rounds; the median of LAUNCHES launches. Optionally a second warp of every CTA streams
// weight tiles into its shared memory all the while (bulk copies, ``depth`` tiles in flight), as vdir's
// stream engine does during the decode step's chain, and counts the bytes that landed during the
// measured rounds. The first table compares the protocols with vdir's stream (two 64 KiB tiles in
// flight per SM); the second keeps fewer or more bytes in flight. Protocols:
//
//   0 counter + bulk copies (vdir's today): the producer bulk-stores its chunk from shared memory,
//     waits for the store, fences the async proxy and adds 1 to the round's counter
//     (red.release.gpu); the consumer polls the counter (ld.acquire.gpu) until every producer added,
//     fences the async proxy and bulk-loads the row onto an mbarrier;
//   1 counter + plain accesses: the producer's lane stores its chunk with st.global and releases the
//     counter; the consumer's lane 0 polls it, the warp loads the row with ld.global and stores it to
//     shared memory: no async proxy, no bulk-op completion between the store and the release;
//   2 flag in the data: every 8-byte word of the row in global memory holds 4 bytes of the row and the
//     round's flag, written and read with single 64-bit accesses (st/ld.relaxed.gpu.b64, which are
//     single-copy atomic), so the consumer's warp polls the row itself: a word whose flag is the
//     round's holds that round's data. No counter, no release, twice the bytes.
//
//   nvcc -arch=sm_90a -O3 -o handoff_protocol_probe bench/handoff_protocol_probe.cu && ./handoff_protocol_probe
//   bash bench/run_all.sh protoprobe
#include <utility>

#include "probe_util.cuh"

static constexpr int LAUNCHES = 7;
static constexpr int ROUNDS = 24;
static constexpr int WARMUP = 4;
static constexpr int PRODUCERS = 128;
static constexpr unsigned MAX_ROW = 16384;  // bytes: an 8192-wide bf16 row

struct Buffers {
  char* rows;           // protocols 0 and 1: ROUNDS rows of MAX_ROW bytes
  uint64_t* words;      // protocol 2: ROUNDS rows of MAX_ROW / 4 words of 8 bytes
  unsigned* counters;   // protocols 0 and 1: one per round
  unsigned* errors;     // words a consumer found wrong
  unsigned* round_ns;   // CTA 0's mean round
  unsigned long long* streamed;  // bytes the stream warps landed during the measured rounds
};

// The value of word ``w`` of round ``r``'s row (never 0: a zeroed buffer is not a row).
__device__ __forceinline__ unsigned row_word(int r, unsigned w) { return 0x9e3779b9u * (r + 1) ^ (w * 2654435761u) | 1u; }

// Protocol 0's producer (one lane): bulk store of ``bytes`` from ``src`` (shared) to ``dst``, then the release.
__device__ void bulk_put(char* dst, const unsigned char* src, unsigned bytes, unsigned* counter) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the st.shared of the chunk, then the bulk read
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst), "r"(smem_addr(src)), "r"(bytes)
               : "memory");
  asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(counter) : "memory");
}

__device__ void counter_wait(const unsigned* counter, unsigned want) {
  unsigned seen;
  do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
  while (seen < want);
}

// How the stream warp reads weight tiles: ``depth`` bulk copies of ``tile`` bytes in flight (0: no stream).
struct Stream {
  unsigned tile;
  int depth;
};
static constexpr int MAX_DEPTH = 4;
static constexpr size_t STREAM_BYTES = 16 * TILE_BYTES;  // each SM's share of the streamed region, read round and round

// Copy ``src``'s STREAM_BYTES into the dynamic shared memory, ``s.depth`` tiles in flight, round and round
// until ``*done``; while ``*measuring``, add each landed tile's bytes to ``streamed``.
__device__ void stream_until_done(const char* src, Stream s, uint64_t* bars, volatile int* done,
                                  volatile int* measuring, unsigned long long* streamed) {
  for (int k = 0; k < s.depth; k++) bar_init(smem_addr(&bars[k]));
  fence_bar_inits();
  const unsigned tiles = unsigned(STREAM_BYTES / s.tile);
  unsigned long long landed = 0;
  auto issue = [&](unsigned t) {
    unsigned k = t % s.depth;
    bulk_copy(smem_addr(tile_slots + k * s.tile), src + size_t(t % tiles) * s.tile, s.tile, smem_addr(&bars[k]));
  };
  for (int k = 0; k < s.depth; k++) issue(k);
  auto landed_wait = [&](unsigned t) {
    bar_wait(smem_addr(&bars[t % s.depth]), (t / s.depth) & 1);
  };
  unsigned t = 0;
  for (;; t++) {
    landed_wait(t);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    if (*measuring) landed += s.tile;
    if (*done) break;
    issue(t + s.depth);
  }
  for (unsigned u = t + 1; u < t + s.depth; u++) landed_wait(u);  // the copies still in flight
  atomicAdd(streamed, landed);
}

__global__ void rounds(int protocol, unsigned row_bytes, Buffers buf, const char* tiles, Stream stream) {
  __shared__ __align__(128) unsigned char row[MAX_ROW];
  __shared__ __align__(128) unsigned char chunk[MAX_ROW / PRODUCERS];
  __shared__ __align__(8) uint64_t got;
  __shared__ __align__(8) uint64_t bars[MAX_DEPTH];
  __shared__ volatile int done, measuring;
  unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned words = row_bytes / 4, chunk_words = words / PRODUCERS;
  if (threadIdx.x == 0) {
    done = measuring = 0;
    bar_init(smem_addr(&got));
    fence_bar_inits();
  }
  __syncthreads();
  if (warp == 1) {  // the weight stream, until warp 0 is done
    if (stream.depth && lane == 0) stream_until_done(tiles + size_t(blockIdx.x) * STREAM_BYTES, stream, bars, &done,
                                                     &measuring, buf.streamed);
    return;
  }
  uint64_t t0 = 0;
  for (int r = 0; r < ROUNDS; r++) {
    if (r == WARMUP && lane == 0) {
      t0 = now_ns();
      measuring = 1;
    }
    // -- produce ------------------------------------------------------------------------------------
    if (blockIdx.x < PRODUCERS) {
      unsigned first = blockIdx.x * chunk_words;
      if (protocol == 0) {
        for (unsigned k = lane; k < chunk_words; k += 32) reinterpret_cast<unsigned*>(chunk)[k] = row_word(r, first + k);
        __syncwarp();
        if (lane == 0)
          bulk_put(buf.rows + size_t(r) * MAX_ROW + 4 * first, chunk, 4 * chunk_words, buf.counters + r);
      } else if (protocol == 1) {
        unsigned* dst = reinterpret_cast<unsigned*>(buf.rows + size_t(r) * MAX_ROW) + first;
        for (unsigned k = lane; k < chunk_words; k += 32) dst[k] = row_word(r, first + k);
        __syncwarp();  // the warp's stores before lane 0's release (cumulative)
        if (lane == 0) asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(buf.counters + r) : "memory");
      } else {
        uint64_t* dst = buf.words + size_t(r) * (MAX_ROW / 4) + first;
        for (unsigned k = lane; k < chunk_words; k += 32) {
          uint64_t v = uint64_t(row_word(r, first + k)) | uint64_t(r + 1) << 32;
          asm volatile("st.relaxed.gpu.global.b64 [%0], %1;" :: "l"(dst + k), "l"(v) : "memory");
        }
      }
    }
    // -- consume ------------------------------------------------------------------------------------
    unsigned* mine = reinterpret_cast<unsigned*>(row);
    if (protocol == 0) {
      if (lane == 0) {
        unsigned b = smem_addr(&got);
        counter_wait(buf.counters + r, PRODUCERS);
        asm volatile("fence.proxy.async.global;" ::: "memory");
        bulk_copy(smem_addr(row), buf.rows + size_t(r) * MAX_ROW, row_bytes, b);
        bar_wait(b, unsigned(r & 1));
      }
      __syncwarp();
    } else if (protocol == 1) {
      if (lane == 0) counter_wait(buf.counters + r, PRODUCERS);
      __syncwarp();
      const uint4* src = reinterpret_cast<const uint4*>(buf.rows + size_t(r) * MAX_ROW);
      for (unsigned k = lane; k < row_bytes / 16; k += 32) reinterpret_cast<uint4*>(row)[k] = src[k];
      __syncwarp();
    } else {
      const uint64_t* src = buf.words + size_t(r) * (MAX_ROW / 4);
      for (unsigned base = 0; base < words; base += 32 * 32) {  // 32 words a lane in flight
        uint64_t v[32];
        bool all;
        do {
          all = true;
#pragma unroll
          for (int k = 0; k < 32; k++) {
            unsigned w = base + k * 32 + lane;
            if (w < words) asm volatile("ld.relaxed.gpu.global.b64 %0, [%1];" : "=l"(v[k]) : "l"(src + w) : "memory");
            else v[k] = uint64_t(r + 1) << 32;
          }
#pragma unroll
          for (int k = 0; k < 32; k++) all &= unsigned(v[k] >> 32) == unsigned(r + 1);
        } while (!all);
#pragma unroll
        for (int k = 0; k < 32; k++) {
          unsigned w = base + k * 32 + lane;
          if (w < words) mine[w] = unsigned(v[k]);
        }
      }
      __syncwarp();
    }
    unsigned bad = 0;
    for (unsigned w = lane; w < words; w += 32) bad += mine[w] != row_word(r, w);
    if (bad) atomicAdd(buf.errors, bad);
    __syncwarp();
  }
  if (lane == 0) {
    measuring = 0;
    if (blockIdx.x == 0) buf.round_ns[0] = unsigned((now_ns() - t0) / (ROUNDS - WARMUP));
    done = 1;
  }
}

// Launch ``launches`` times and return the medians of (the round's ns, the stream's GB/s during the rounds).
static std::pair<double, double> measure(int sms, int smem, int protocol, unsigned row_bytes, const Buffers& buf,
                                         const char* region, Stream stream) {
  std::vector<double> ns, gbs;
  for (int i = 0; i < LAUNCHES; i++) {
    check(cudaMemset(buf.counters, 0, 4 * ROUNDS), "counters reset");
    check(cudaMemset(buf.words, 0, size_t(ROUNDS) * MAX_ROW * 2), "words reset");
    check(cudaMemset(buf.streamed, 0, 8), "stream count reset");
    rounds<<<sms, 64, smem>>>(protocol, row_bytes, buf, region, stream);
    check(cudaGetLastError(), "launch");
    unsigned round = 0;
    unsigned long long bytes = 0;
    check(cudaMemcpy(&round, buf.round_ns, 4, cudaMemcpyDeviceToHost), "read back");
    check(cudaMemcpy(&bytes, buf.streamed, 8, cudaMemcpyDeviceToHost), "read back");
    ns.push_back(round);
    gbs.push_back(double(bytes) / (double(round) * (ROUNDS - WARMUP)));
  }
  std::sort(ns.begin(), ns.end());
  std::sort(gbs.begin(), gbs.end());
  return {ns[LAUNCHES / 2], gbs[LAUNCHES / 2]};
}

int main() {
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  if (sms < PRODUCERS) {
    std::fprintf(stderr, "needs at least %d SMs\n", PRODUCERS);
    return 1;
  }
  Buffers buf{};
  char* region = nullptr;  // each SM's STREAM_BYTES to stream
  check(cudaMalloc(&buf.rows, size_t(ROUNDS) * MAX_ROW), "rows");
  check(cudaMalloc(&buf.words, size_t(ROUNDS) * MAX_ROW * 2), "words");
  check(cudaMalloc(&buf.counters, 4 * ROUNDS), "counters");
  check(cudaMalloc(&buf.errors, 4), "errors");
  check(cudaMalloc(&buf.round_ns, 4), "times");
  check(cudaMalloc(&buf.streamed, 8), "stream count");
  check(cudaMalloc(&region, size_t(sms) * STREAM_BYTES), "region");
  check(cudaMemset(buf.errors, 0, 4), "errors reset");
  int smem = 2 * TILE_BYTES;
  check(cudaFuncSetAttribute(rounds, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  const char* names[] = {"counter + bulk copies", "counter + plain accesses", "flag in each word"};
  std::printf("%d CTAs; %d of them write a chunk of a row each round, every CTA waits for the whole row;\n"
              "mean time of a round over %d rounds, median of %d launches (stream: GB/s the stream warps\n"
              "landed during the rounds):\n", sms, PRODUCERS, ROUNDS - WARMUP, LAUNCHES);
  for (unsigned row_bytes : {4096u, 16384u})
    for (int streaming : {0, 1})
      for (int protocol : {0, 1, 2}) {
        Stream stream{TILE_BYTES, streaming ? 2 : 0};  // vdir's stream ring: two 64 KiB tiles in flight
        auto [ns, gbs] = measure(sms, smem, protocol, row_bytes, buf, region, stream);
        std::printf("  row %5u bytes, %-36s %-26s %6.0f ns  stream %5.0f GB/s\n", row_bytes,
                    streaming ? "every SM streaming 2 x 64 KiB,": "no other traffic,", names[protocol], ns, gbs);
      }
  std::printf("\nthe same rounds (row of 4096 bytes) while every SM keeps fewer or more bytes in flight:\n");
  const Stream streams[] = {{65536, 1}, {32768, 2}, {16384, 2}, {16384, 4}, {8192, 4}, {32768, 1}, {16384, 1}};
  for (Stream st : streams)
    for (int protocol : {0, 2}) {
      auto [ns, gbs] = measure(sms, smem, protocol, 4096, buf, region, st);
      std::printf("  %d x %2u KiB in flight per SM, %-26s %6.0f ns  stream %5.0f GB/s\n", st.depth, st.tile / 1024,
                  names[protocol], ns, gbs);
    }
  unsigned total_errors = 0;
  check(cudaMemcpy(&total_errors, buf.errors, 4, cudaMemcpyDeviceToHost), "errors");
  std::printf("words received wrong: %u\n", total_errors);
  return total_errors ? 1 : 0;
}
