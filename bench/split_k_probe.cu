// What a split-K down projection would take off a layer of the 16-layer MLP stack, on the GPU, without
// vdir: the measured ground for issue 13's first item before it is built.
//
// A layer of the stack today hands two rows between all SMs: the activation row (each SM computes a
// chunk of the gate/up rows, every SM needs the whole row for its down rows) and the residual row (each
// SM computes a chunk of the down rows, every SM needs the whole row for the next layer's norm). In a
// split-K down projection each SM multiplies the activation chunk it made itself by the matching
// columns of the down weights, which gives a partial sum of the whole residual row; the partials are
// added in global memory by reducing bulk stores, and only the residual row is handed over. The adds
// are made deterministic by doing them on 64-bit fixed-point integers (integer addition does not care
// about the order the SMs' adds reach L2 in), at twice the bytes of f32 adds.
//
// One CTA per SM, two warps. Warp 1's lane 0 streams the layers' weight tiles (64 KiB bulk copies,
// RING in flight, each slot given back by the consumer), as vdir's stream engine does. Warp 0 is the
// consumer: for each tile it waits for it to land, spends ``compute_ns`` (the gemv's step), and gives
// the slot back; between the phases it makes the hand-offs of the mode:
//
//   two hand-offs (today's): after the gate/up tiles, PRODUCERS SMs bulk-store their chunk of the
//     activation row (bf16) and release a counter; every SM polls the counter and bulk-loads the row;
//     after the down tiles, the same with the residual row (bf16);
//   split-K, u64: after the down tiles, every SM adds its partial row (hidden x 8 bytes, shared memory)
//     into the layer's accumulator with one cp.reduce.async.bulk .add.u64, waits for it, releases a
//     counter; every SM polls the counter until every SM added, and bulk-loads the accumulated row;
//   split-K, f32: the same with f32 partials (hidden x 4 bytes; the order of the adds is not fixed);
//   stream only: the tiles and their steps, no hand-off: what the weights alone take.
//
// CTA 0 reports the mean time of a layer over the last LAYERS - WARMUP layers; the median of LAUNCHES
// launches. Every handed-over or accumulated row is checked at sampled words.
//
//   nvcc -arch=sm_90a -O3 -o split_k_probe bench/split_k_probe.cu && ./split_k_probe [step_ns ...]
//   bash bench/run_all.sh splitkprobe
#include "probe_util.cuh"

static constexpr int LAUNCHES = 5;
static constexpr int LAYERS = 16;
static constexpr int WARMUP = 2;
static constexpr int PRODUCERS = 128;       // SMs that write a chunk of a handed-over row (as the protocol probe)
static constexpr unsigned MAX_HIDDEN = 5120;
static constexpr unsigned MAX_INTER = 14336;
static constexpr unsigned ROW_BYTES = MAX_HIDDEN * 8;  // the largest row loaded: an accumulated u64 row
static constexpr unsigned PART_BYTES = MAX_HIDDEN * 8;  // a partial row, or a chunk being handed over
static constexpr unsigned SAMPLES = 32;     // words of each received row checked (one per lane)

enum Mode { TWO_HANDOFFS = 0, SPLIT_K_U64 = 1, SPLIT_K_F32 = 2, STREAM_ONLY = 3 };
static const char* const MODE_NAMES[] = {"two hand-offs (today)", "split-K, u64 adds", "split-K, f32 adds",
                                         "stream only"};

struct Shape {
  unsigned hidden, inter;
  int up_tiles, down_tiles;  // 64 KiB weight tiles per SM and layer: gate and up, down
};

struct Buffers {
  char* rows;          // two hand-offs: per layer, the activation row then the residual row
  char* accs;          // split-K: per layer, the accumulated row (zeroed before each launch)
  unsigned* counters;  // per layer, two
  unsigned* errors;    // sampled words found wrong
  unsigned* layer_ns;  // CTA 0's mean layer
};

static constexpr size_t LAYER_ROWS = 2 * MAX_INTER * 2;  // bytes of a layer's rows (two hand-offs)

// The value of word ``w`` of handed-over row ``r`` (never 0: a zeroed buffer is not a row).
__device__ __forceinline__ unsigned row_word(unsigned r, unsigned w) { return (0x9e3779b9u * (r + 1) ^ (w * 2654435761u)) | 1u; }

__device__ void counter_wait(const unsigned* counter, unsigned want) {
  unsigned seen;
  do asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
  while (seen < want);
}

// One bulk copy from shared ``src`` to global ``dst`` (``op``: a plain store, or an add of u64 or f32
// elements), waited for, then the release of ``counter``. One lane.
__device__ void put_and_release(int op, char* dst, const unsigned char* src, unsigned bytes, unsigned* counter) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");  // the st.shared of the data, then the bulk read
  if (op == TWO_HANDOFFS)
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst), "r"(smem_addr(src)),
                 "r"(bytes) : "memory");
  else if (op == SPLIT_K_U64)
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u64 [%0], [%1], %2;" :: "l"(dst),
                 "r"(smem_addr(src)), "r"(bytes) : "memory");
  else
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" :: "l"(dst),
                 "r"(smem_addr(src)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;\n\tcp.async.bulk.wait_group 0;" ::: "memory");
  asm volatile("fence.proxy.async.global;" ::: "memory");
  asm volatile("red.release.gpu.global.add.u32 [%0], 1;" :: "l"(counter) : "memory");
}

// Poll ``counter`` up to ``want``, then bulk-load ``bytes`` of ``src`` into shared ``dst`` on mbarrier ``bar``
// (its ``*phase``-th phase). One lane.
__device__ void acquire_and_load(const unsigned* counter, unsigned want, unsigned char* dst, const char* src,
                                 unsigned bytes, uint64_t* bar, unsigned* phase) {
  counter_wait(counter, want);
  asm volatile("fence.proxy.async.global;" ::: "memory");
  bulk_copy(smem_addr(dst), src, bytes, smem_addr(bar));
  bar_wait(smem_addr(bar), (*phase)++ & 1);
}

__global__ void layers(int mode, Shape shape, Buffers buf, const char* weights, unsigned compute_ns) {
  unsigned char* ring = tile_slots;
  unsigned char* row = tile_slots + RING * TILE_BYTES;
  unsigned char* part = row + ROW_BYTES;
  __shared__ __align__(8) uint64_t full[RING], empty[RING], got;
  const unsigned warp = threadIdx.x / 32, lane = threadIdx.x % 32, sms = gridDim.x, sm = blockIdx.x;
  const int per_layer = shape.up_tiles + shape.down_tiles;
  if (threadIdx.x == 0) {
    for (int s = 0; s < RING; s++) {
      bar_init(smem_addr(&full[s]));
      bar_init(smem_addr(&empty[s]));
    }
    bar_init(smem_addr(&got));
    fence_bar_inits();
  }
  __syncthreads();
  if (warp == 1) {  // the weight stream: each tile into the next slot once the consumer gave it back
    if (lane == 0)
      for (int g = 0; g < LAYERS * per_layer; g++) {
        int s = g % RING;
        if (g >= RING) bar_wait(smem_addr(&empty[s]), unsigned(g / RING - 1) & 1);
        bulk_copy(smem_addr(ring + s * TILE_BYTES), weights + (size_t(g) * sms + sm) * TILE_BYTES, TILE_BYTES,
                  smem_addr(&full[s]));
      }
    return;
  }
  // the partial row, the same every layer: u64 (sm + 1) * (w + 1), or f32 (sm + 1)
  for (unsigned w = lane; w < shape.hidden; w += 32) {
    if (mode == SPLIT_K_U64) reinterpret_cast<uint64_t*>(part)[w] = uint64_t(sm + 1) * (w + 1);
    if (mode == SPLIT_K_F32) reinterpret_cast<float*>(part)[w] = float(sm + 1);
  }
  __syncwarp();
  int g = 0;
  unsigned phase = 0, bad = 0;
  auto steps = [&](int tiles) {  // the consumer's steps over the phase's tiles
    for (int k = 0; k < tiles; k++, g++) {
      if (lane == 0) {
        int s = g % RING;
        bar_wait(smem_addr(&full[s]), unsigned(g / RING) & 1);
        uint64_t t = now_ns();
        while (now_ns() - t < compute_ns) {
        }
        asm volatile("mbarrier.arrive.shared.b64 _, [%0];" :: "r"(smem_addr(&empty[s])) : "memory");
      }
      __syncwarp();
    }
  };
  auto hand_over = [&](unsigned r, unsigned bytes, char* dst, unsigned* counter) {  // a bf16 row among all SMs
    const unsigned chunk = (bytes / PRODUCERS + 15) / 16 * 16, words = chunk / 4;  // bulk copies: whole 16 bytes
    if (sm < PRODUCERS) {
      for (unsigned w = lane; w < words; w += 32) reinterpret_cast<unsigned*>(part)[w] = row_word(r, sm * words + w);
      __syncwarp();
      if (lane == 0) put_and_release(TWO_HANDOFFS, dst + sm * chunk, part, chunk, counter);
    }
    if (lane == 0) acquire_and_load(counter, PRODUCERS, row, dst, chunk * PRODUCERS, &got, &phase);
    __syncwarp();
    unsigned w = lane * (bytes / 4 / SAMPLES);
    bad += reinterpret_cast<unsigned*>(row)[w] != row_word(r, w);
    __syncwarp();
  };
  uint64_t t0 = 0;
  for (int l = 0; l < LAYERS; l++) {
    if (l == WARMUP) t0 = now_ns();
    char* rows = buf.rows + l * LAYER_ROWS;
    steps(shape.up_tiles);
    if (mode == TWO_HANDOFFS) hand_over(2 * l, shape.inter * 2, rows, buf.counters + 2 * l);
    steps(shape.down_tiles);
    if (mode == TWO_HANDOFFS) hand_over(2 * l + 1, shape.hidden * 2, rows + MAX_INTER * 2, buf.counters + 2 * l + 1);
    if (mode == SPLIT_K_U64 || mode == SPLIT_K_F32) {
      const unsigned bytes = shape.hidden * (mode == SPLIT_K_U64 ? 8 : 4);
      char* acc = buf.accs + size_t(l) * ROW_BYTES;
      if (lane == 0) {
        put_and_release(mode, acc, part, bytes, buf.counters + 2 * l);
        acquire_and_load(buf.counters + 2 * l, sms, row, acc, bytes, &got, &phase);
      }
      __syncwarp();
      unsigned w = lane * (shape.hidden / SAMPLES);
      uint64_t total = uint64_t(sms) * (sms + 1) / 2;
      if (mode == SPLIT_K_U64) bad += reinterpret_cast<uint64_t*>(row)[w] != total * (w + 1);
      else bad += reinterpret_cast<float*>(row)[w] != float(total);
      __syncwarp();
    }
  }
  if (bad) atomicAdd(buf.errors, bad);
  if (lane == 0 && sm == 0) buf.layer_ns[0] = unsigned((now_ns() - t0) / (LAYERS - WARMUP));
}

// The median over LAUNCHES launches of CTA 0's mean layer, in ns.
static double measure(int sms, int smem, int mode, Shape shape, const Buffers& buf, const char* weights,
                      unsigned compute_ns) {
  return median_word(LAUNCHES, buf.layer_ns, [&] {
    check(cudaMemset(buf.counters, 0, 4 * 2 * LAYERS), "counters reset");
    check(cudaMemset(buf.accs, 0, size_t(LAYERS) * ROW_BYTES), "accumulators reset");
    layers<<<sms, 64, smem>>>(mode, shape, buf, weights, compute_ns);
  });
}

// 64 KiB tiles per SM of ``bytes`` of weights spread over ``sms`` SMs, rounded up.
static int tiles_per_sm(size_t bytes, int sms) { return int((bytes + size_t(sms) * TILE_BYTES - 1) / (size_t(sms) * TILE_BYTES)); }

int main(int argc, char** argv) {
  std::vector<unsigned> steps_ns;  // a tile's step, each timed: the arguments, or a gemv tile's and half of it
  for (int a = 1; a < argc; a++) steps_ns.push_back(unsigned(std::atoi(argv[a])));
  if (steps_ns.empty()) steps_ns = {1300, 650};
  int sms = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  if (sms < PRODUCERS) {
    std::fprintf(stderr, "needs at least %d SMs\n", PRODUCERS);
    return 1;
  }
  const unsigned shapes[][2] = {{2048, 8192}, {4096, 14336}, {5120, 13824}};
  int most_tiles = 0;
  for (auto [h, i] : shapes) most_tiles = std::max(most_tiles, tiles_per_sm(size_t(3) * h * i * 2, sms) + 1);
  Buffers buf{};
  char* weights = nullptr;
  check(cudaMalloc(&buf.rows, LAYERS * LAYER_ROWS), "rows");
  check(cudaMalloc(&buf.accs, size_t(LAYERS) * ROW_BYTES), "accumulators");
  check(cudaMalloc(&buf.counters, 4 * 2 * LAYERS), "counters");
  check(cudaMalloc(&buf.errors, 4), "errors");
  check(cudaMalloc(&buf.layer_ns, 4), "times");
  check(cudaMalloc(&weights, size_t(LAYERS) * most_tiles * sms * TILE_BYTES), "weights");
  check(cudaMemset(buf.errors, 0, 4), "errors reset");
  int smem = RING * TILE_BYTES + ROW_BYTES + PART_BYTES;
  check(cudaFuncSetAttribute(layers, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem");
  std::printf("%d CTAs, %d x 64 KiB weight tiles in flight each; mean layer of %d, median of %d launches\n", sms,
              RING, LAYERS - WARMUP, LAUNCHES);
  std::printf("%-8s %-12s %-22s %10s %9s %12s\n", "step ns", "MLP", "mode", "us/layer", "weight", "vs today");
  for (unsigned compute_ns : steps_ns)
  for (auto [h, i] : shapes) {
    Shape shape{h, i, tiles_per_sm(size_t(2) * h * i * 2, sms), tiles_per_sm(size_t(h) * i * 2, sms)};
    double bytes = double(shape.up_tiles + shape.down_tiles) * sms * TILE_BYTES;
    double today = 0;
    for (int mode : {TWO_HANDOFFS, SPLIT_K_U64, SPLIT_K_F32, STREAM_ONLY}) {
      double ns = measure(sms, smem, mode, shape, buf, weights, compute_ns);
      if (mode == TWO_HANDOFFS) today = ns;
      std::printf("%-8u %5u/%-6u %-22s %10.2f %6.0f GB/s %+10.1f%%\n", compute_ns, h, i, MODE_NAMES[mode], ns / 1000,
                  bytes / ns,
                  100 * (ns - today) / today);
    }
  }
  unsigned total_errors = 0;
  check(cudaMemcpy(&total_errors, buf.errors, 4, cudaMemcpyDeviceToHost), "errors");
  std::printf("sampled words received wrong: %u\n", total_errors);
  return total_errors ? 1 : 0;
}
