// Tiles claimed at run time against a static placement, without vdir: one CTA per SM streams a buffer
// of 64 KiB tiles with bulk copies (ring 2, evict_first, as vdir's stream engine), each CTA taking
//   static   - tiles b, b + G, b + 2G, ... (G CTAs), as vdir's placement gives an SM its tiles;
//   claimed  - every tile claimed with an atomicAdd on a global ticket as a ring slot frees;
//   tail N   - tiles b + kG for k below (tiles / G) - N statically, the rest claimed (no limit);
//   tail N/c - the same with at most c claims per CTA (a queue with c claim slots per SM).
// A claim is made when its copy is issued, a ring slot ahead of the tile it follows, so the atomic's
// round trip overlaps the copies in flight. Each figure is the mean of a batch of 12 launches back to
// back (buffers in rotation over at least 1 GiB, beyond L2), the median of 5 batches; the last
// launch's CTAs stamp their start and end (%globaltimer): the spread of the ends is the tail the
// claims aim at.
//
//   nvcc -arch=sm_90a -O3 -o claim_probe bench/claim_probe.cu && ./claim_probe
//   bash bench/run_all.sh claimprobe
#include "probe_util.cuh"

static constexpr int MODE_STATIC = 0;
static constexpr int MODE_HYBRID = 1;  // static_per_cta strided tiles, then claims (all claimed if 0)

struct StreamArgs {
  const char* src;
  unsigned ntiles;
  int mode;
  unsigned static_per_cta;  // MODE_HYBRID: strided tiles per CTA before it claims
  unsigned max_claims;      // MODE_HYBRID: claims per CTA, 0 for no limit
  unsigned* tickets;        // two tickets: launch k claims from tickets[k & 1] and zeroes the other
  unsigned launch;
  unsigned long long* stamps;  // per CTA: start, end (ns)
  unsigned* sink;
};

__global__ void claim_stream(StreamArgs a) {
  __shared__ __align__(8) uint64_t bars[RING];
  if (threadIdx.x != 0) return;
  unsigned long long t0 = now_ns();
  if (blockIdx.x == 0) a.tickets[(a.launch + 1) & 1] = 0;
  unsigned* ticket = a.tickets + (a.launch & 1);
  const unsigned G = gridDim.x, b = blockIdx.x;
  unsigned statics = a.static_per_cta;
  if (a.mode == MODE_STATIC) statics = a.ntiles > b ? (a.ntiles - b + G - 1) / G : 0u;
  unsigned pool_first = a.static_per_cta * G;
  unsigned taken = 0, claims = 0;
  bool exhausted = a.mode == MODE_STATIC;
  auto next = [&]() -> long {
    if (taken < statics) return long(b) + long(taken++) * G;
    if (exhausted || (a.max_claims && claims >= a.max_claims)) return -1;
    claims++;
    unsigned t = pool_first + atomicAdd(ticket, 1u);
    if (t >= a.ntiles) { exhausted = true; return -1; }
    return t;
  };
  uint64_t pol;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(pol));
  for (int s = 0; s < RING; s++) bar_init(smem_addr(&bars[s]));
  fence_bar_inits();
  auto issue = [&](int s, long t) {
    bulk_copy(smem_addr(tile_slots + s * TILE_BYTES), a.src + size_t(t) * TILE_BYTES, TILE_BYTES, smem_addr(&bars[s]),
              true, pol);
  };
  int inflight = 0;
  for (int s = 0; s < RING; s++) {
    long t = next();
    if (t < 0) break;
    issue(s, t);
    inflight++;
  }
  unsigned acc = 0, uses[RING] = {};
  for (int i = 0; inflight > 0; i++) {
    int s = i % RING;
    bar_wait(smem_addr(&bars[s]), uses[s] & 1);
    uses[s]++;
    inflight--;
    acc ^= *(volatile unsigned*)(tile_slots + s * TILE_BYTES);
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    long t = next();
    if (t >= 0) { issue(s, t); inflight++; }
  }
  a.stamps[2 * b] = t0;
  a.stamps[2 * b + 1] = now_ns();
  if (acc == 0x12345678u) a.sink[0] = acc;
}

struct Config {
  char name[48];
  int mode;
  int tail;  // MODE_HYBRID: tiles per CTA left to the claims (-1: every tile claimed)
  unsigned max_claims;
};

int main() {
  int sms;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  const size_t POOL = size_t(1) << 30;  // buffers rotate over this
  const size_t BIG = size_t(448) << 20;
  char* buf;
  check(cudaMalloc(&buf, POOL + BIG), "malloc");
  check(cudaMemset(buf, 1, POOL + BIG), "memset");
  unsigned *tickets, *sink;
  unsigned long long* stamps;
  check(cudaMalloc(&tickets, 8), "malloc");
  check(cudaMemset(tickets, 0, 8), "memset");
  check(cudaMalloc(&sink, 64), "malloc");
  check(cudaMalloc(&stamps, 16 * sms), "malloc");
  check(cudaFuncSetAttribute(claim_stream, cudaFuncAttributeMaxDynamicSharedMemorySize, RING * TILE_BYTES), "attr");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<Config> cfgs = {{"static (strided)", MODE_STATIC, 0, 0},
                              {"claimed (every tile)", MODE_HYBRID, -1, 0},
                              {"tail 1", MODE_HYBRID, 1, 0},
                              {"tail 2", MODE_HYBRID, 2, 0},
                              {"tail 1/2", MODE_HYBRID, 1, 2},
                              {"tail 2/3", MODE_HYBRID, 2, 3},
                              {"tail 0/1 (the remainder)", MODE_HYBRID, 0, 1}};
  unsigned launch = 0;
  std::printf("%-26s %8s %9s %10s %8s %9s %9s\n", "placement", "MiB", "us", "GB/s", "tiles", "end-min", "end-max");
  for (size_t mib : {448, 128, 64, 32, 16}) {
    size_t bytes = mib << 20;
    unsigned ntiles = unsigned(bytes / TILE_BYTES);
    size_t nbuf = std::max<size_t>(2, POOL / bytes);
    for (const Config& c : cfgs) {
      unsigned per = ntiles / sms;
      if (c.tail > 0 && unsigned(c.tail) > per) continue;
      StreamArgs a{buf, ntiles, c.mode, c.tail < 0 ? 0u : per - unsigned(c.tail), c.max_claims, tickets, 0, stamps, sink};
      if (c.mode == MODE_HYBRID && c.max_claims && a.static_per_cta * sms + c.max_claims * sms < ntiles) continue;
      std::vector<double> ts;
      for (int r = 0; r < 6; r++) {
        const int batch = 12;
        cudaEventRecord(e0);
        for (int k = 0; k < batch; k++) {
          a.src = buf + (launch % nbuf) * bytes;
          a.launch = launch++;
          claim_stream<<<sms, 32, RING * TILE_BYTES>>>(a);
        }
        cudaEventRecord(e1);
        check(cudaEventSynchronize(e1), "batch");
        float ms;
        cudaEventElapsedTime(&ms, e0, e1);
        if (r) ts.push_back(ms * 1e3 / batch);
      }
      check(cudaGetLastError(), "launch");
      std::vector<unsigned long long> st(2 * sms);
      check(cudaMemcpy(st.data(), stamps, 16 * sms, cudaMemcpyDeviceToHost), "stamps");
      unsigned long long first = ~0ull, lo = ~0ull, hi = 0;
      for (int i = 0; i < sms; i++) {
        first = std::min(first, st[2 * i]);
        lo = std::min(lo, st[2 * i + 1]);
        hi = std::max(hi, st[2 * i + 1]);
      }
      std::sort(ts.begin(), ts.end());
      double us = ts[ts.size() / 2];
      std::printf("%-26s %8zu %9.2f %10.0f %8u %9.2f %9.2f\n", c.name, mib, us, bytes / us / 1e3, ntiles,
                  (lo - first) / 1e3, (hi - first) / 1e3);
    }
  }
  return 0;
}
