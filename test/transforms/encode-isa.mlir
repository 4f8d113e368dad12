// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s

// The encoded queues, listed by -t isa: the tensor maps the loads and stores
// name (each a buffer seen as rows x segments x 8-byte elements, with its
// box), then per SM and engine each instruction's operation, its region or
// tiles (a load or store also names its tensor map and the (row, segment)
// coordinates of its box), the bits and counters it waits on and signals,
// and the micro-op it came from. The reload of @act waits on the
// other SM, so the scheduler hoists the next two independent loads (%wdt, %res)
// ahead of it.

// CHECK:      // @mlp: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 1 global counter(s), 64 dependency bits
// CHECK:      // buffer 5: act 1x64 bf16 (out)
// CHECK-NEXT: // buffer 6: out 1x64 bf16 (out)
// CHECK-NEXT: // tensor map 0: h as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// CHECK-NEXT: // tensor map 1: g as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// CHECK-NEXT: // tensor map 2: wg as 64 x 1 x 16 of 8 B, box 32 x 1 x 16
// CHECK:      // tensor map 5: h as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// CHECK:      // tensor map 8: out as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// CHECK-NEXT: sm 0 load:
// CHECK-NEXT:   0: load  @h+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap0(0, 0)  // %x ({{.*}}mlp_small.mlir:3:3)
// CHECK-NEXT:   1: load  @g+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap1(0, 0) signal(b0)  // %gt
// CHECK-NEXT:   2: load  @wg+0 [32 x 128B, stride 128] -> smem[0] tmap2(0, 0) signal(b1)  // %wgt
// CHECK-NEXT:   3: load  @wu+0
// CHECK-NEXT:   4: load  @wd+0 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap4(0, 0)  // %wdt
// CHECK-NEXT:   5: load  @h+0 [1 x 64B, stride 128] -> smem[{{[0-9]+}}] tmap5(0, 0)  // %res
// CHECK-NEXT:   6: load  @act+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap6(0, 0) wait(c0>=2*epoch) signal(b{{[0-9]+}})  // %av
// CHECK:      sm 0 compute:
// CHECK-NEXT:   0: rmsnorm(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(1, 64, 0) f0=1e-05 wait(b0=1)
// CHECK-NEXT:   1: gemv(smem[0], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(b1=1)
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @act+0 [1 x 64B, stride 128] tmap7(0, 0) wait(b{{[0-9]+}}=1) release(c0)
// CHECK:      sm 1 load:
// CHECK:        2: load  @wg+4096 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap2(32, 0)
// CHECK:      sm 1 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @act+64 [1 x 64B, stride 128] tmap7(0, 1) {{.*}}release(c0)
