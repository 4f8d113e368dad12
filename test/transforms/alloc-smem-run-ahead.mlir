// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem' | filecheck %s
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem{run-ahead=0}' | filecheck %s --check-prefix=RINGS
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem{run-ahead=9}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not vdir-opt %s -p 'vdir-pipeline{num-sms=1 run-ahead=-1}' 2>&1 | filecheck %s --check-prefix=BAD-PIPELINE
// RUN: vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem{weight-ring=2}' | filecheck %s --check-prefix=WRING
// RUN: not vdir-opt %s -p 'vdir-place{num-sms=1},vdir-schedule,vdir-alloc-smem{weight-ring=9}' 2>&1 | filecheck %s --check-prefix=BAD-WRING

// Two phases of 64 KiB weight tiles, as in an MLP block 8192 wide: against
// a row cut into two 8 KiB chunks (beside the 16 KiB vectors it came from),
// then against seven 8 KiB chunks of another row. Rings as deep as each
// class's peak fit, but leave the weight tiles one slot (with run-ahead=0 every tile
// at offset 0, each load waiting for the gemv before it). With run-ahead
// (default 2) the SM is allocated by liveness, the streamed tiles live from
// the load two places before them and placed from the bottom, the vectors
// from the top: three slots rotate in the first phase, two in the second
// (two ahead do not fit beside the seven chunks; one does). The fourth
// tile reuses the first one's bytes and waits for its gemv.

// CHECK-LABEL: vdir.program @phases
// CHECK:       %ht = vdir.load {{.*}}smem = 210944>}
// CHECK:       vdir.load %w[0, 0] {{.*}}smem = 0, label = "%w0[i=0]">}
// CHECK:       %p = vdir.compute gemv({{.*}}{vdir.sched = #vdir.sched<id = [[P0:[0-9]+]],
// CHECK:       vdir.load %w[0, 4096] {{.*}}smem = 65536, label = "%w1[i=0]">}
// CHECK:       vdir.load %w[8, 0] {{.*}}smem = 131072, label = "%w0[i=1]"
// CHECK:       vdir.load %w[8, 4096] {{.*}}smem = 0, label = "%w1[i=1]", after = {{\[\[}}[[P0]]]]>}
// CHECK:       vdir.load %w[16, 0] {{.*}}smem = 65536, label = "%w0[i=2]"
// CHECK:       vdir.load %d[0, 0] {{.*}}smem = 0, label = "%d0[k=0]"
// CHECK:       vdir.load %d[0, 4096] {{.*}}smem = 65536, label = "%d1[k=0]"
// CHECK:       vdir.load %d[0, 8192] {{.*}}smem = 0, label = "%d2[k=0]"

// RINGS-LABEL: vdir.program @phases
// RINGS:       vdir.load %w[0, 0] {{.*}}smem = 0, label = "%w0[i=0]">}
// RINGS:       vdir.load %w[0, 4096] {{.*}}smem = 0, label = "%w1[i=0]"
// RINGS:       vdir.load %w[8, 0] {{.*}}smem = 0, label = "%w0[i=1]"
// RINGS:       vdir.load %d[0, 0] {{.*}}smem = 0, label = "%d0[k=0]"

// BAD: error: vdir-alloc-smem: option 'run-ahead' must be at most 8, got 9
// BAD-PIPELINE: error: vdir-pipeline: option 'run-ahead' must be at least 0, got -1
vdir.program @phases(%h: !vdir.buffer<1x8192xbf16>, %g: !vdir.buffer<1x8192xbf16>, %w: !vdir.buffer<24x8192xbf16>, %v: !vdir.buffer<1x28672xbf16>, %d: !vdir.buffer<16x28672xbf16>, %y: !vdir.buffer<1x24xbf16>, %z: !vdir.buffer<1x16xbf16>) {
  %ht = vdir.load %h[0, 0] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x8192xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x8192xbf16> -> !vdir.tile<1x8192xbf16>
  %xn = vdir.compute add(%ht, %gt) : (!vdir.tile<1x8192xbf16>, !vdir.tile<1x8192xbf16>) -> !vdir.tile<1x8192xbf16>
  %x0 = vdir.compute slice(%xn) {start = 0 : i64, width = 4096 : i64} : (!vdir.tile<1x8192xbf16>) -> !vdir.tile<1x4096xbf16>
  %x1 = vdir.compute slice(%xn) {start = 4096 : i64, width = 4096 : i64} : (!vdir.tile<1x8192xbf16>) -> !vdir.tile<1x4096xbf16>
  vdir.repeat %i = 0 to 3 {
    %r = affine.apply affine_map<(d0) -> (d0 * 8)> (%i)
    %w0 = vdir.load %w[%r, 0] : !vdir.buffer<24x8192xbf16> -> !vdir.tile<8x4096xbf16>
    %p = vdir.compute gemv(%w0, %x0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
    %w1 = vdir.load %w[%r, 4096] : !vdir.buffer<24x8192xbf16> -> !vdir.tile<8x4096xbf16>
    %yt = vdir.compute gemv(%w1, %x1, %p) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
    %ys = vdir.store %yt, %y[0, %r] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x24xbf16>
  }
  %v0 = vdir.load %v[0, 0] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v1 = vdir.load %v[0, 4096] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v2 = vdir.load %v[0, 8192] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v3 = vdir.load %v[0, 12288] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v4 = vdir.load %v[0, 16384] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v5 = vdir.load %v[0, 20480] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  %v6 = vdir.load %v[0, 24576] : !vdir.buffer<1x28672xbf16> -> !vdir.tile<1x4096xbf16>
  vdir.repeat %k = 0 to 2 {
    %q = affine.apply affine_map<(d0) -> (d0 * 8)> (%k)
    %d0 = vdir.load %d[%q, 0] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a0 = vdir.compute gemv(%d0, %v0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>) -> !vdir.tile<1x8xf32>
    %d1 = vdir.load %d[%q, 4096] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a1 = vdir.compute gemv(%d1, %v1, %a0) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
    %d2 = vdir.load %d[%q, 8192] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a2 = vdir.compute gemv(%d2, %v2, %a1) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
    %d3 = vdir.load %d[%q, 12288] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a3 = vdir.compute gemv(%d3, %v3, %a2) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
    %d4 = vdir.load %d[%q, 16384] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a4 = vdir.compute gemv(%d4, %v4, %a3) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
    %d5 = vdir.load %d[%q, 20480] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a5 = vdir.compute gemv(%d5, %v5, %a4) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
    %d6 = vdir.load %d[%q, 24576] : !vdir.buffer<16x28672xbf16> -> !vdir.tile<8x4096xbf16>
    %a6 = vdir.compute gemv(%d6, %v6, %a5) : (!vdir.tile<8x4096xbf16>, !vdir.tile<1x4096xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xbf16>
    %zs = vdir.store %a6, %z[0, %q] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x16xbf16>
  }
}

// weight-ring=2: the streamed tiles in a ring of two 64 KiB slots at the top
// of the 227328-byte arena (from 96256), rotating through both phases; the
// vectors and chunks by liveness below it, never in the ring's bytes.

// WRING-LABEL: vdir.program @phases
// WRING:       %ht = vdir.load {{.*}}smem = 0>}
// WRING:       vdir.load %w[0, 0] {{.*}}smem = 96256, label = "%w0[i=0]">}
// WRING:       vdir.load %w[0, 4096] {{.*}}smem = 161792, label = "%w1[i=0]">}
// WRING:       vdir.load %w[8, 0] {{.*}}smem = 96256, label = "%w0[i=1]"
// WRING:       vdir.load %d[0, 0] {{.*}}smem = 96256, label = "%d0[k=0]"
// WRING:       vdir.load %d[0, 4096] {{.*}}smem = 161792, label = "%d1[k=0]"

// BAD-WRING: error: vdir-alloc-smem: option 'weight-ring' must be at most 8, got 9
