// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// Operand shapes must fit the family's signature.

vdir.program @gemv_k(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv': weights 8x64xbf16 and x 1x32xbf16 disagree on K (64 vs 32)
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @gemv_x_not_vector(%w: !vdir.buffer<8x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv': x must be a 1xN tile, got 8x64xbf16
  %yt = vdir.compute gemv(%wt, %wt) : (!vdir.tile<8x64xbf16>, !vdir.tile<8x64xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @gemv_acc(%w: !vdir.buffer<8x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %p = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv': the accumulator must be 1x8xf32, got 1x8xbf16
  %yt = vdir.compute gemv(%wt, %xt, %p) : (!vdir.tile<8x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @add(%a: !vdir.buffer<2x16xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<2x16xbf16> -> !vdir.tile<1x16xbf16>
  %u = vdir.load %a[0, 0] : !vdir.buffer<2x16xbf16> -> !vdir.tile<2x16xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add': operand shapes differ (1x16xbf16 vs 2x16xbf16)
  %v = vdir.compute add(%t, %u) : (!vdir.tile<1x16xbf16>, !vdir.tile<2x16xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %v, %a[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<2x16xbf16>
}

// -----

vdir.program @rmsnorm_weight(%a: !vdir.buffer<1x16xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  %g = vdir.load %a[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'rmsnorm': weight must be 1x16, got 1x8xbf16
  %n = vdir.compute rmsnorm(%x, %g) {eps = 1.0e-05 : f32} : (!vdir.tile<1x16xbf16>, !vdir.tile<1x8xbf16>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %n, %a[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}

// -----

vdir.program @rope_table_width(%a: !vdir.buffer<4x64xbf16>, %t: !vdir.buffer<8x32xbf16>) {
  %x = vdir.load %a[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %c = vdir.load %t[0, 0] : !vdir.buffer<8x32xbf16> -> !vdir.tile<1x32xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'rope': cos must be 1x64, got 1x32xbf16
  %r = vdir.compute rope(%x, %c, %c) : (!vdir.tile<4x64xbf16>, !vdir.tile<1x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<4x64xbf16>
  %s = vdir.store %r, %a[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}
