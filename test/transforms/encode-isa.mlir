// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s
// RUN: vdir-opt %S/Inputs/mlp_small.mlir -p 'vdir-place{num-sms=2 stream-loads=false},vdir-schedule,vdir-alloc-smem,vdir-layout-deps,vdir-encode' -t isa | filecheck %s --check-prefix=ONEQUEUE

// The encoded queues, listed by -t isa: the tensor maps the loads and stores
// name (each a buffer seen as rows x segments x 8-byte elements, with its
// box; numbered in the order the queues name them), then per SM and engine
// (load, compute, store, stream) each instruction's operation, its region or
// tiles (a load or store also names its tensor map and the (row, segment)
// coordinates of its box), the bits and counters it waits on and signals,
// and the micro-op it came from.
//
// The reload of @act waits on the other SM: it is alone on the load engine,
// and every other load, waiting on nothing, is on the stream engine, which
// runs on to the next two (%wdt, %res) while %av waits, in program order (no
// queue holds both kinds, so nothing is hoisted). They are in different
// queues, so each signals a bit of its own and the gemv on %wdt and %av
// waits for both.

// CHECK:      // @mlp: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 1 global counter(s), 64 dependency bits
// CHECK:      // buffer 5: act 1x64 bf16 (out)
// CHECK-NEXT: // buffer 6: out 1x64 bf16 (out)
// CHECK-NEXT: // tensor map 0: act as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// CHECK-NEXT: // tensor map 1: act as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// CHECK-NEXT: // tensor map 2: out as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// CHECK-NEXT: // tensor map 3: h as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// CHECK-NEXT: // tensor map 4: g as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// CHECK-NEXT: // tensor map 5: wg as 64 x 1 x 16 of 8 B, box 32 x 1 x 16
// CHECK:      // tensor map 8: h as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// CHECK-NEXT: sm 0 load:
// CHECK-NEXT:   0: load  @act+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap0(0, 0) wait(c0>=2*epoch) signal(b[[BV:[0-9]+]])  // %av ({{.*}}mlp_small.mlir:15:3)
// CHECK-NEXT: sm 0 compute:
// CHECK-NEXT:   0: rmsnorm(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(1, 64, 0) f0=1e-05 wait(b0=1)
// CHECK-NEXT:   1: gemv(smem[0], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(b1=1)
// CHECK:        4: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(b[[BV]]=1, b[[BD:[0-9]+]]=1)  // %d[j=0]
// CHECK:      sm 0 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @act+0 [1 x 64B, stride 128] tmap1(0, 0) wait(b{{[0-9]+}}=1) release(c0)
// CHECK:      sm 0 stream:
// CHECK-NEXT:   0: load  @h+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap3(0, 0)  // %x ({{.*}}mlp_small.mlir:3:3)
// CHECK-NEXT:   1: load  @g+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap4(0, 0) signal(b0)  // %gt
// CHECK-NEXT:   2: load  @wg+0 [32 x 128B, stride 128] -> smem[0] tmap5(0, 0) signal(b1)  // %wgt
// CHECK-NEXT:   3: load  @wu+0
// CHECK-NEXT:   4: load  @wd+0 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap7(0, 0) signal(b[[BD]])  // %wdt
// CHECK-NEXT:   5: load  @h+0 [1 x 64B, stride 128] -> smem[{{[0-9]+}}] tmap8(0, 0) signal(b{{[0-9]+}})  // %res
// CHECK-NEXT: sm 1 load:
// CHECK-NEXT:   0: load  @act+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap0(0, 0) wait(c0>=2*epoch) signal(b{{[0-9]+}})  // %av
// CHECK:      sm 1 store:
// CHECK-NEXT:   0: store smem[{{[0-9]+}}] -> @act+64 [1 x 64B, stride 128] tmap1(0, 1) {{.*}}release(c0)
// CHECK:      sm 1 stream:
// CHECK:        2: load  @wg+4096 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap5(32, 0)

// With stream-loads=false every load is on the load engine, and the hoist is
// visible in its queue: %wdt and %res at positions 4 and 5, %av at 6 (and
// %wdt, completed before %av by the in-order engine, signals no bit).

// ONEQUEUE:      // @mlp: 2 SMs, {{[0-9]+}} bytes of tiles per SM, 1 global counter(s), 64 dependency bits
// ONEQUEUE:      // buffer 5: act 1x64 bf16 (out)
// ONEQUEUE-NEXT: // buffer 6: out 1x64 bf16 (out)
// ONEQUEUE-NEXT: // tensor map 0: h as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// ONEQUEUE-NEXT: // tensor map 1: g as 1 x 1 x 16 of 8 B, box 1 x 1 x 16
// ONEQUEUE-NEXT: // tensor map 2: wg as 64 x 1 x 16 of 8 B, box 32 x 1 x 16
// ONEQUEUE:      // tensor map 5: h as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// ONEQUEUE:      // tensor map 8: out as 1 x 2 x 8 of 8 B, box 1 x 1 x 8
// ONEQUEUE-NEXT: sm 0 load:
// ONEQUEUE-NEXT:   0: load  @h+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap0(0, 0)  // %x ({{.*}}mlp_small.mlir:3:3)
// ONEQUEUE-NEXT:   1: load  @g+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap1(0, 0) signal(b0)  // %gt
// ONEQUEUE-NEXT:   2: load  @wg+0 [32 x 128B, stride 128] -> smem[0] tmap2(0, 0) signal(b1)  // %wgt
// ONEQUEUE-NEXT:   3: load  @wu+0
// ONEQUEUE-NEXT:   4: load  @wd+0 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap4(0, 0)  // %wdt
// ONEQUEUE-NEXT:   5: load  @h+0 [1 x 64B, stride 128] -> smem[{{[0-9]+}}] tmap5(0, 0)  // %res
// ONEQUEUE-NEXT:   6: load  @act+0 [1 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap6(0, 0) wait(c0>=2*epoch) signal(b{{[0-9]+}})  // %av
// ONEQUEUE:      sm 0 compute:
// ONEQUEUE-NEXT:   0: rmsnorm(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(1, 64, 0) f0=1e-05 wait(b0=1)
// ONEQUEUE-NEXT:   1: gemv(smem[0], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(b1=1)
// ONEQUEUE:      sm 0 store:
// ONEQUEUE-NEXT:   0: store smem[{{[0-9]+}}] -> @act+0 [1 x 64B, stride 128] tmap7(0, 0) wait(b{{[0-9]+}}=1) release(c0)
// ONEQUEUE:      sm 1 load:
// ONEQUEUE:        2: load  @wg+4096 [32 x 128B, stride 128] -> smem[{{[0-9]+}}] tmap2(32, 0)
// ONEQUEUE:      sm 1 store:
// ONEQUEUE-NEXT:   0: store smem[{{[0-9]+}}] -> @act+64 [1 x 64B, stride 128] tmap7(0, 1) {{.*}}release(c0)
// ONEQUEUE-NOT:  stream:
