// RUN: vdir-opt %s -p vdir-fuse | filecheck %s
// RUN: not vdir-opt %s -p 'vdir-fuse{only=rmsnorm-gemv,no-such-pattern}' 2>&1 | filecheck %s --check-prefix=ONLY

// Pairs that vdir-fuse must leave alone, each with the reason. (A producer and
// consumer on different engine kinds cannot be written for the h200 target,
// whose only compute-capable engine is `compute`; test_fuse.py covers it
// with a target that has two.)

// ONLY: error: vdir-fuse: unknown pattern(s) in 'only': no-such-pattern

// The normalised x feeds two gemvs: fusing would compute it twice.
// CHECK-LABEL: vdir.program @multi_use
// CHECK:         %xn = vdir.compute rmsnorm(%xt, %gt)
// CHECK-NEXT:    %a = vdir.compute gemv(%wt, %xn)
// CHECK-NEXT:    %b = vdir.compute gemv(%wt, %xn)
vdir.program @multi_use(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute gemv(%wt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %b = vdir.compute gemv(%wt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %a, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s2 = vdir.store %b, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// The gemv result is also stored, and another gemv feeds both silu_mul
// operands: both intermediates have a second use.
// CHECK-LABEL: vdir.program @gemv_also_stored
// CHECK:         %a = vdir.compute gemv(%wt, %xt)
// CHECK-NEXT:    %h = vdir.compute silu_mul(%a, %xt)
// CHECK:         %b = vdir.compute gemv(%wt, %xt)
// CHECK-NEXT:    %sq = vdir.compute silu_mul(%b, %b)
vdir.program @gemv_also_stored(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%a, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %a, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s2 = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %b = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %sq = vdir.compute silu_mul(%b, %b) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s3 = vdir.store %sq, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// The rmsnorm is outside the repeat, the gemv inside: fusing would redo the
// rmsnorm every iteration (and move it across the block boundary).
// CHECK-LABEL: vdir.program @across_repeat
// CHECK:         %xn = vdir.compute rmsnorm(%xt, %gt)
// CHECK:         vdir.repeat
// CHECK:           %y = vdir.compute gemv(%w1, %xn)
vdir.program @across_repeat(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)>(%i)
    %w1 = vdir.load %w[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x64xbf16>
    %y = vdir.compute gemv(%w1, %xn) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %y, %out[0, %r] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// A gemv with an f32 accumulator has no fused form, as producer or consumer.
// CHECK-LABEL: vdir.program @accumulator
// CHECK:         %xn = vdir.compute rmsnorm(%xt, %gt)
// CHECK-NEXT:    %y = vdir.compute gemv(%wt, %xn, %acc)
// CHECK-NEXT:    %z = vdir.compute add(%y, %xt)
vdir.program @accumulator(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %p: !vdir.buffer<1x64xf32>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %acc = vdir.load %p[0, 0] : !vdir.buffer<1x64xf32> -> !vdir.tile<1x64xf32>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute gemv(%wt, %xn, %acc) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xbf16>
  %z = vdir.compute add(%y, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %z, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// A gemv declared with an f32 result (a partial sum) has no fused form.
// CHECK-LABEL: vdir.program @f32_output
// CHECK:         %xn = vdir.compute rmsnorm(%xt, %gt)
// CHECK-NEXT:    %y = vdir.compute gemv(%wt, %xn) on compute : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xf32>
vdir.program @f32_output(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xf32>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute gemv(%wt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xf32>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x64xf32>, !vdir.buffer<1x64xf32>
}

// Producer and consumer belong to different flows.
// CHECK-LABEL: vdir.program @flow_mismatch
// CHECK:         %a = vdir.compute gemv(%wt, %xt) on compute flow 1
// CHECK-NEXT:    %y = vdir.compute add(%a, %xt) on compute flow 2
vdir.program @flow_mismatch(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) flow 1 : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute add(%a, %xt) flow 2 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// No fused family: rmsnorm into add, add into silu_mul, silu_mul into add.
// CHECK-LABEL: vdir.program @no_family
// CHECK:         %n = vdir.compute rmsnorm(%xt, %xt)
// CHECK-NEXT:    %a = vdir.compute add(%n, %xt)
// CHECK-NEXT:    %b = vdir.compute add(%xt, %xt)
// CHECK-NEXT:    %c = vdir.compute silu_mul(%b, %xt)
// CHECK-NEXT:    %d = vdir.compute add(%c, %xt)
vdir.program @no_family(%x: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>, %o1: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %n = vdir.compute rmsnorm(%xt, %xt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute add(%n, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %b = vdir.compute add(%xt, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %c = vdir.compute silu_mul(%b, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %d = vdir.compute add(%c, %xt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %d, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s1 = vdir.store %a, %o1[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// Loads that must not merge: a store to the buffer in between (even inside a
// repeat), a different region, a different tile shape, and a later load that
// waits for a token the earlier one does not.
// CHECK-LABEL: vdir.program @loads_kept
// CHECK:         %a = vdir.load %buf[0, 0]
// CHECK:         %b = vdir.load %buf[0, 0]
// CHECK:         %c = vdir.load %buf[0, 0]
// CHECK:         %d = vdir.load %buf[0, 8]
// CHECK:         %e = vdir.load %buf[0, 0] {{.*}} -> !vdir.tile<1x8xbf16>
// CHECK:         %f = vdir.load %buf[0, 0] on load after %t
vdir.program @loads_kept(%buf: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %a = vdir.load %buf[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  %s0 = vdir.store %a, %buf[0, 32] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  %b = vdir.load %buf[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  vdir.repeat %i = 0 to 2 {
    %s1 = vdir.store %b, %buf[0, 48] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
  %c = vdir.load %buf[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  %d = vdir.load %buf[0, 8] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  %e = vdir.load %buf[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x8xbf16>
  %t = vdir.store %c, %out[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  %f = vdir.load %buf[0, 0] after %t : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  %t2 = vdir.store %d, %out[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  %t3 = vdir.store %e, %out[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x64xbf16>
  %t4 = vdir.store %f, %out[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
}
