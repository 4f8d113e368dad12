// RUN: vdir-opt %s --verify-diagnostics --split-input-file | filecheck %s

// Family inputs are bf16 (only gemv's accumulator is f32).

vdir.program @gemv(%w: !vdir.buffer<8x64xf32>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x8xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<8x64xf32> -> !vdir.tile<8x64xf32>
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'gemv': weights must be bf16, got 8x64xf32
  %yt = vdir.compute gemv(%wt, %xt) : (!vdir.tile<8x64xf32>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @add(%a: !vdir.buffer<1x8xf32>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'add': lhs must be bf16, got 1x8xf32
  %u = vdir.compute add(%t, %t) : (!vdir.tile<1x8xf32>, !vdir.tile<1x8xf32>) -> !vdir.tile<1x8xf32>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xf32>, !vdir.buffer<1x8xf32>
}
