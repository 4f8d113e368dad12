// When a small gemv's weight tiles land, without vdir: one CTA per SM streams the few tiles of its rows
// with bulk copies into a ring of shared-memory slots, as vdir's stream engine does (the next tile is
// issued when one lands), and thread 0 records %globaltimer as each tile, or each piece of a tile,
// lands. It asks two questions a small gemv's gap to cuBLAS raises (docs/performance.md, round 47):
//
// * does a tile issued beside another (the ring's two) land only when both have, so that the compute
//   engine's first step waits for twice a tile's bytes? Variants delay the ring's second issue, or keep
//   1, 3 or 4 tiles in flight;
// * do the pieces of one tile, each on its own mbarrier, land in the order they were issued, so that a
//   compute could start on the first piece while the rest stream in (a wait inside the body)?
//
// Each variant runs 8 launches to warm up and 16 timed ones, each over a fresh window of a 1 GiB buffer
// (no launch finds its tiles in L2). Times are from the launch's first CTA start (the least start over
// the CTAs); per tile the median over CTAs and launches, and "last" the median over launches of the
// latest landing of any CTA. "model end" folds a compute step over each CTA's landings, as vdir's
// compute engine runs them one after another: a step of FIXED_US plus BODY_US per 32 KiB, which may
// start on a tile's first piece (the fixed part and that piece's share of the body), its later pieces'
// shares each once that piece has landed; it reports the latest CTA's end, median over launches. The
// two figures split round 28's 0.90 µs per 16 x 1024 step under load, about half of it outside the body
// (round 20).
//
//   nvcc -arch=sm_90a -O3 -o landing_probe bench/landing_probe.cu && ./landing_probe
//   bash bench/run_all.sh landprobe
#include "probe_util.cuh"

static const int MAX_SLOTS = 64;  // per CTA: mbarriers (ring slots x pieces), and landings (tiles x pieces)
static const double FIXED_US = 0.45, BODY_US = 0.45;  // a compute step: outside the body, per 32 KiB of body

struct Variant {
  const char* name;
  int tiles;            // per CTA
  unsigned tile_bytes;
  int ring;             // tiles in flight
  int pieces;           // bulk copies (and mbarriers) per tile
  unsigned delay_ns;    // the ring's second issue waits this long after the first
};

// out per CTA: its start, then one landing time per (tile, piece)
__global__ void landing(const char* src, Variant v, unsigned long long* out) {
  __shared__ __align__(8) uint64_t bars[MAX_SLOTS];
  if (threadIdx.x != 0) return;
  const int P = v.pieces;
  const unsigned piece = v.tile_bytes / P;
  for (int i = 0; i < v.ring * P; i++) bar_init(smem_addr(&bars[i]));
  fence_bar_inits();
  const char* base = src + (size_t)blockIdx.x * v.tiles * v.tile_bytes;
  unsigned long long* o = out + (size_t)blockIdx.x * (1 + v.tiles * P);
  const uint64_t t0 = now_ns();
  o[0] = t0;
  auto issue = [&](int t) {
    int s = t % v.ring;
    for (int p = 0; p < P; p++)
      bulk_copy(smem_addr(tile_slots + s * v.tile_bytes + p * piece), base + (size_t)t * v.tile_bytes + p * piece,
                piece, smem_addr(&bars[s * P + p]));
  };
  int issued = 0;
  for (; issued < v.ring && issued < v.tiles; issued++) {
    if (issued == 1 && v.delay_ns)
      while (now_ns() - t0 < v.delay_ns) {}
    issue(issued);
  }
  for (int t = 0; t < v.tiles; t++) {
    int s = t % v.ring;
    unsigned parity = (t / v.ring) & 1;
    for (int p = 0; p < P; p++) {
      bar_wait(smem_addr(&bars[s * P + p]), parity);
      o[1 + t * P + p] = now_ns();
    }
    // nothing reads the slots: the next copy into one needs no proxy fence after its wait
    if (issued < v.tiles) issue(issued++);
  }
}

static double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  return x.empty() ? 0.0 : x[x.size() / 2];
}

// the compute engine's steps over one CTA's landings (µs from the launch's first start): see the header
static double model_end(const std::vector<double>& land, const Variant& v) {
  const double body = BODY_US * v.tile_bytes / 32768.0 / v.pieces;
  double end = 0.0;
  for (int t = 0; t < v.tiles; t++) {
    end = std::max(end, land[t * v.pieces]) + FIXED_US + body;
    for (int p = 1; p < v.pieces; p++) end = std::max(end, land[t * v.pieces + p]) + body;
  }
  return end;
}

int main() {
  int sms;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "device properties");
  const size_t area = (size_t)1 << 30;
  char* buf;
  check(cudaMalloc(&buf, area), "allocate the weights");
  check(cudaMemset(buf, 1, area), "fill the weights");
  const int smem_max = 200 * 1024;
  check(cudaFuncSetAttribute(landing, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_max), "shared memory limit");
  const unsigned K32 = 32768, K64 = 65536;
  std::vector<Variant> vs = {
      // 8192 x 1024: four 16-row tiles of 32 KiB per SM
      {"4 x 32K, ring 2", 4, K32, 2, 1, 0},
      {"4 x 32K, ring 2, 2nd after 0.4 us", 4, K32, 2, 1, 400},
      {"4 x 32K, ring 2, 2nd after 1.0 us", 4, K32, 2, 1, 1000},
      {"4 x 32K, ring 1", 4, K32, 1, 1, 0},
      {"4 x 32K, ring 3", 4, K32, 3, 1, 0},
      {"4 x 32K, ring 4", 4, K32, 4, 1, 0},
      {"4 x 32K, ring 2, 2 pieces", 4, K32, 2, 2, 0},
      {"4 x 32K, ring 2, 4 pieces", 4, K32, 2, 4, 0},
      // 4096 x 1024: two tiles of 32 KiB
      {"2 x 32K, ring 2", 2, K32, 2, 1, 0},
      {"2 x 32K, ring 2, 2nd after 0.4 us", 2, K32, 2, 1, 400},
      {"2 x 32K, ring 2, 2 pieces", 2, K32, 2, 2, 0},
      // 2048 x 2048: one tile of 64 KiB
      {"1 x 64K", 1, K64, 1, 1, 0},
      {"1 x 64K, 2 pieces", 1, K64, 1, 2, 0},
      {"1 x 64K, 4 pieces", 1, K64, 1, 4, 0},
      // 8192 x 2048: four tiles of 64 KiB
      {"4 x 64K, ring 2", 4, K64, 2, 1, 0},
      {"4 x 64K, ring 2, 2 pieces", 4, K64, 2, 2, 0},
  };
  printf("%s, %d SMs; µs from the launch's first CTA start; medians over CTAs and 16 launches\n", prop.name, sms);
  printf("%-36s %-44s %8s %10s\n", "variant", "tile landings (last piece; first piece)", "last", "model end");
  unsigned long long* out;
  check(cudaMalloc(&out, (size_t)sms * (1 + MAX_SLOTS) * sizeof(unsigned long long)), "allocate the times");
  int window = 0;
  for (const Variant& v : vs) {
    if (v.ring * v.pieces > MAX_SLOTS || v.tiles * v.pieces > MAX_SLOTS || v.tile_bytes % (16 * v.pieces) ||
        v.ring * v.tile_bytes > (unsigned)smem_max) {
      std::fprintf(stderr, "variant '%s': at most %d slots and landings, pieces of whole 16 bytes, a ring within "
                   "%d bytes of shared memory\n", v.name, MAX_SLOTS, smem_max);
      return 1;
    }
    const size_t bytes = (size_t)sms * v.tiles * v.tile_bytes;
    const int windows = (int)(area / bytes);
    const int per_cta = 1 + v.tiles * v.pieces;
    const int dyn = std::max<int>(v.ring * v.tile_bytes, 120 * 1024);  // one CTA per SM
    std::vector<std::vector<double>> land_tile(v.tiles), land_first(v.tiles);
    std::vector<double> lasts, ends;
    std::vector<unsigned long long> host((size_t)sms * per_cta);
    for (int launch = 0; launch < 24; launch++) {
      const char* src = buf + (size_t)(window++ % windows) * bytes;
      landing<<<sms, 32, dyn>>>(src, v, out);
      check(cudaGetLastError(), "launch");
      check(cudaMemcpy(host.data(), out, host.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost), "read back");
      if (launch < 8) continue;
      unsigned long long t0 = ~0ull;
      for (int c = 0; c < sms; c++) t0 = std::min(t0, host[(size_t)c * per_cta]);
      double last = 0.0, end = 0.0;
      for (int c = 0; c < sms; c++) {
        std::vector<double> land(v.tiles * v.pieces);
        for (int i = 0; i < v.tiles * v.pieces; i++) land[i] = (host[(size_t)c * per_cta + 1 + i] - t0) * 1e-3;
        for (int t = 0; t < v.tiles; t++) {
          land_tile[t].push_back(land[t * v.pieces + v.pieces - 1]);
          land_first[t].push_back(land[t * v.pieces]);
        }
        last = std::max(last, land.back());
        end = std::max(end, model_end(land, v));
      }
      lasts.push_back(last);
      ends.push_back(end);
    }
    char text[256];
    int n = 0;
    for (int t = 0; t < v.tiles; t++) {
      if (t) text[n++] = ' ';
      if (v.pieces > 1) n += snprintf(text + n, sizeof text - n, "%.2f;%.2f", median(land_tile[t]), median(land_first[t]));
      else n += snprintf(text + n, sizeof text - n, "%.2f", median(land_tile[t]));
    }
    printf("%-36s %-44s %8.2f %10.2f\n", v.name, text, median(lasts), median(ends));
  }
  return 0;
}
