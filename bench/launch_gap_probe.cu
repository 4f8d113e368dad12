// What a launch of a persistent kernel shaped like vdir's costs back to back, with and without
// programmatic dependent launch (PDL), on the H200, without vdir.
//
// The kernel has vdir's shape: one CTA per SM, 352 threads, nearly all of the shared memory, and a
// body that spins a given time on %globaltimer (0: an empty launch). Launched N times in a row on
// one stream, plainly or with the launch attribute programmaticStreamSerialization (each launch's
// CTAs run griddepcontrol.wait before their body, so that nothing of a launch starts before the one
// before it has finished and its writes are visible; each launch says griddepcontrol.launch_dependents
// at its start, so that the next may be set up meanwhile). The time per launch is the events' span
// over N, the median of 5 batches; it less the body is what a launch costs around its body. Then
// the same with an event recorded before and after each launch, as bench_gpu.torch_times times one
// launch (the median of the launches' own spans). Each batch is queued behind a 20 ms spin.
// A second table times an empty launch that way by its shape (threads per CTA, dynamic shared memory),
// from vdir's down to a small library kernel's: how much of the events' span is the shape's own.
//
//   nvcc -arch=sm_90a -O3 -o launch_gap_probe bench/launch_gap_probe.cu && ./launch_gap_probe
//   bash bench/run_all.sh gapprobe
#include <algorithm>
#include <vector>

#include "probe_util.cuh"

static constexpr int THREADS = 352;
static constexpr int LAUNCHES = 400;
static constexpr int BATCHES = 5;


__global__ void persistent_like(unsigned body_ns, int pdl, unsigned* last, int touch_smem) {
  if (pdl) {
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
  uint64_t start = now_ns();
  if (threadIdx.x == 0) {
    if (touch_smem) tile_slots[0] = 1;
    while (now_ns() - start < body_ns) {
    }
    last[blockIdx.x] = unsigned(start);
  }
  __syncthreads();
}

// Holds the stream while a batch is queued behind it, so that the batch runs back to back.
__global__ void hold(unsigned long long ns) {
  uint64_t start = now_ns();
  while (now_ns() - start < ns) {
  }
}

// The us per launch of ``cfg`` (``body_us`` of spin in each; PDL's wait where ``cfg`` asks for PDL), the median of
// BATCHES batches of LAUNCHES launches queued behind a 20 ms spin: the batch's span over LAUNCHES, or
// with ``each`` the median of the launches' own spans between an event before and after each.
static float us_per_launch(const cudaLaunchConfig_t& cfg, unsigned body_us, int each, unsigned* last,
                           std::vector<cudaEvent_t>& marks) {
  int touch_smem = cfg.dynamicSmemBytes > 0, pdl = cfg.numAttrs > 0;
  std::vector<float> per;
  for (int batch = 0; batch < BATCHES + 1; batch++) {
    hold<<<1, 1, 0, cfg.stream>>>(20'000'000ull);
    check(cudaEventRecord(marks[0], cfg.stream), "record");
    for (int i = 0; i < LAUNCHES; i++) {
      if (each) check(cudaEventRecord(marks[2 + 2 * i], cfg.stream), "record");
      check(cudaLaunchKernelEx(&cfg, persistent_like, body_us * 1000, pdl, last, touch_smem), "launch");
      if (each) check(cudaEventRecord(marks[3 + 2 * i], cfg.stream), "record");
    }
    check(cudaEventRecord(marks[1], cfg.stream), "record");
    check(cudaEventSynchronize(marks[1]), "sync");
    float ms = 0;
    if (each) {
      std::vector<float> spans(LAUNCHES);
      for (int i = 0; i < LAUNCHES; i++)
        check(cudaEventElapsedTime(&spans[i], marks[2 + 2 * i], marks[3 + 2 * i]), "elapsed");
      std::sort(spans.begin(), spans.end());
      ms = spans[LAUNCHES / 2];
    } else {
      check(cudaEventElapsedTime(&ms, marks[0], marks[1]), "elapsed");
      ms /= LAUNCHES;
    }
    if (batch > 0) per.push_back(ms * 1000);  // the first batch warms up
  }
  std::sort(per.begin(), per.end());
  return per[BATCHES / 2];
}

int main() {
  int sms = 0, smem = 0;
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0), "SM count");
  check(cudaDeviceGetAttribute(&smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0), "smem");
  smem -= 1024;  // as vdir's kernel: nearly all of it
  check(cudaFuncSetAttribute(persistent_like, cudaFuncAttributeMaxDynamicSharedMemorySize, smem), "smem attr");
  unsigned* last = nullptr;
  check(cudaMalloc(&last, sms * sizeof(unsigned)), "alloc");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "stream");
  std::vector<cudaEvent_t> marks(2 + 2 * LAUNCHES);  // the batch's two, then two around each launch
  for (cudaEvent_t& e : marks) check(cudaEventCreate(&e), "event");
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  std::printf("%d CTAs of %d threads, %d bytes of shared memory each; %d launches a batch\n", sms, THREADS,
              smem, LAUNCHES);
  std::printf("%8s %12s %8s %14s %14s\n", "body us", "launch", "events", "us per launch", "less the body");
  for (unsigned body_us : {0u, 5u, 20u}) {
    for (int pdl : {0, 1}) {
      for (int each : {0, 1}) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(sms);
        cfg.blockDim = dim3(THREADS);
        cfg.dynamicSmemBytes = smem;
        cfg.stream = stream;
        cfg.attrs = pdl ? attr : nullptr;
        cfg.numAttrs = pdl ? 1 : 0;
        float us = us_per_launch(cfg, body_us, each, last, marks);
        std::printf("%8u %12s %8s %14.2f %14.2f\n", body_us, pdl ? "PDL" : "plain", each ? "each" : "batch", us,
                    us - body_us);
      }
    }
  }
  std::printf("\nan empty launch by shape, %d CTAs, an event before and after each (median span, us)\n", sms);
  std::printf("%8s %14s %14s\n", "threads", "smem bytes", "us per launch");
  const int shapes[][2] = {{THREADS, smem}, {THREADS, 96 * 1024}, {THREADS, 16 * 1024}, {THREADS, 0},
                           {128, 0}, {32, 0}};
  for (const auto& shape : shapes) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms);
    cfg.blockDim = dim3(shape[0]);
    cfg.dynamicSmemBytes = shape[1];
    cfg.stream = stream;
    std::printf("%8d %14d %14.2f\n", shape[0], shape[1], us_per_launch(cfg, 0, 1, last, marks));
  }
  return 0;
}
