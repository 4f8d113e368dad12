// RUN: %roundtrip

// Every op family of the registry, with its operand and result types.

vdir.program @families(%w: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<1x64xbf16>) {
  %wt = vdir.load %w[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %xt = vdir.load %v[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %v[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %et = vdir.load %v[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
  %p = vdir.compute gemv(%wt, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xf32>
  %acc = vdir.compute gemv(%wt, %xt, %p) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<1x16xbf16>
  %rg = vdir.compute rmsnorm_gemv(%wt, %xt, %gt) {eps = 1.000000e-06 : f32} : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
  %sm = vdir.compute silu_mul(%acc, %rg) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %gs = vdir.compute gemv_silu_mul(%wt, %xt, %sm) {operand = 1 : i64} : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %ga = vdir.compute gemv_add(%wt, %xt, %gs) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %out = vdir.compute add(%ga, %et) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
  %done = vdir.store %out, %o[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
}

// CHECK-LABEL: vdir.program @families
// CHECK: %p = vdir.compute gemv(%wt, %xt) on compute : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xf32>
// CHECK: %acc = vdir.compute gemv(%wt, %xt, %p) on compute : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<1x16xbf16>
// CHECK: %rg = vdir.compute rmsnorm_gemv(%wt, %xt, %gt) {eps = 1.000000e-06 : f32} on compute
// CHECK: %sm = vdir.compute silu_mul(%acc, %rg) on compute
// CHECK: %gs = vdir.compute gemv_silu_mul(%wt, %xt, %sm) {operand = 1 : i64} on compute
// CHECK: %ga = vdir.compute gemv_add(%wt, %xt, %gs) on compute
// CHECK: %out = vdir.compute add(%ga, %et) on compute
// CHECK: %done = vdir.store %out, %o[0, 0] on store : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
