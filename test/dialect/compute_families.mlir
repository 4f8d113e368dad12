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

// add on f32 operands (result f32 by default, or bf16 as declared), and
// sum_rows: a PxC f32 tile of partial sums -> its 1xC column sums.
vdir.program @f32_families(%s: !vdir.buffer<4x64xf32>, %o: !vdir.buffer<1x64xf32>, %ob: !vdir.buffer<1x64xbf16>) {
  %st = vdir.load %s[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  %sum = vdir.compute sum_rows(%st) : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xf32>
  %sumb = vdir.compute sum_rows(%st) : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xbf16>
  %twice = vdir.compute add(%sum, %sum) : (!vdir.tile<1x64xf32>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xf32>
  %wide = vdir.compute add(%sumb, %sumb) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xf32>
  %both = vdir.compute add(%twice, %wide) : (!vdir.tile<1x64xf32>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xbf16>
  %d1 = vdir.store %twice, %o[0, 0] : !vdir.tile<1x64xf32>, !vdir.buffer<1x64xf32>
  %d2 = vdir.store %both, %ob[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
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

// CHECK-LABEL: vdir.program @f32_families
// CHECK: %sum = vdir.compute sum_rows(%st) on compute : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xf32>
// CHECK: %sumb = vdir.compute sum_rows(%st) on compute : (!vdir.tile<4x64xf32>) -> !vdir.tile<1x64xbf16>
// CHECK: %twice = vdir.compute add(%sum, %sum) on compute : (!vdir.tile<1x64xf32>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xf32>
// CHECK: %wide = vdir.compute add(%sumb, %sumb) on compute : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xf32>
// CHECK: %both = vdir.compute add(%twice, %wide) on compute : (!vdir.tile<1x64xf32>, !vdir.tile<1x64xf32>) -> !vdir.tile<1x64xbf16>
