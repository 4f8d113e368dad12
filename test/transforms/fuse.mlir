// RUN: vdir-opt %s -p vdir-fuse | filecheck %s
// RUN: vdir-opt %s -p 'vdir-fuse{min-benefit=10.0}' | filecheck %s --check-prefix=NONE
// RUN: vdir-opt %s -p 'vdir-fuse{only=merge-loads}' | filecheck %s --check-prefix=LOADS

// Each program shows one fusion that vdir-fuse does. With a minimum benefit
// above any estimate nothing changes (NONE); `only` restricts the patterns.

// rmsnorm into a gemv prologue: eps is kept, the fused op takes the gemv's
// name, waits for both ops' tokens and carries the one flow that is set.
// CHECK-LABEL: vdir.program @rmsnorm_prologue
// CHECK-NOT:     rmsnorm(
// CHECK:         %y = vdir.compute rmsnorm_gemv(%wt, %xt, %gt) {eps = 1.000000e-05 : f32} on compute flow 4 after %t0, %t1 : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
// CHECK-NEXT:    vdir.store %y, %out[0, 0]
// NONE-LABEL: vdir.program @rmsnorm_prologue
// NONE:         %xn = vdir.compute rmsnorm(
// NONE:         %y = vdir.compute gemv(
vdir.program @rmsnorm_prologue(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<32x64xbf16>, %out: !vdir.buffer<1x32xbf16>, %o2: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x64xbf16>
  %t0 = vdir.store %xt, %o2[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %t1 = vdir.store %gt, %o2[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} after %t0 : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y = vdir.compute gemv(%wt, %xn) flow 4 after %t1, %t0 : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %s = vdir.store %y, %out[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x32xbf16>
}

// silu_mul into a gemv epilogue, the gemv as the first operand: silu(gemv) * up.
// CHECK-LABEL: vdir.program @silu_mul_operand0
// CHECK-NOT:     gemv(
// CHECK:         %h = vdir.compute gemv_silu_mul(%wt, %xt, %ut) {operand = 0 : i64} on compute : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
vdir.program @silu_mul_operand0(%x: !vdir.buffer<1x64xbf16>, %u: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %u[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%a, %ut) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// The gemv as the second operand: silu(gate) * gemv.
// CHECK-LABEL: vdir.program @silu_mul_operand1
// CHECK:         %h = vdir.compute gemv_silu_mul(%wt, %xt, %gate) {operand = 1 : i64}
vdir.program @silu_mul_operand1(%x: !vdir.buffer<1x64xbf16>, %u: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gate = vdir.load %u[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%gate, %a) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// Both silu_mul operands are fusable gemvs: the later one in program order
// (%up, whose weights stream last) fuses; %gate stays a gemv.
// CHECK-LABEL: vdir.program @silu_mul_two_gemvs
// CHECK:         %gate = vdir.compute gemv(%wg, %xt)
// CHECK-NOT:     %up =
// CHECK:         %h = vdir.compute gemv_silu_mul(%wu, %xt, %gate) {operand = 1 : i64}
vdir.program @silu_mul_two_gemvs(%x: !vdir.buffer<1x64xbf16>, %wgb: !vdir.buffer<64x64xbf16>, %wub: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wg = vdir.load %wgb[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %wu = vdir.load %wub[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %gate = vdir.compute gemv(%wg, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %up = vdir.compute gemv(%wu, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// A residual add fuses with the gemv on either side.
// CHECK-LABEL: vdir.program @residual_add
// CHECK:         %y1 = vdir.compute gemv_add(%wt, %xt, %rt) on compute
// CHECK:         %y2 = vdir.compute gemv_add(%wt, %xt, %rt) on compute
// CHECK-NOT:     vdir.compute add(
vdir.program @residual_add(%x: !vdir.buffer<1x64xbf16>, %r: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %rt = vdir.load %r[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y1 = vdir.compute add(%a, %rt) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %b = vdir.compute gemv(%wt, %xt) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %y2 = vdir.compute add(%rt, %b) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s1 = vdir.store %y1, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %s2 = vdir.store %y2, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// Producer and consumer in the same repeat body fuse inside it.
// CHECK-LABEL: vdir.program @inside_repeat
// CHECK:         vdir.repeat %i = 0 to 4 {
// CHECK:           %w1 = vdir.load %w[%r, 0]
// CHECK-NEXT:      %y = vdir.compute gemv_add(%w1, %xt, %rt)
// CHECK-NEXT:      vdir.store %y, %out[0, %c]
vdir.program @inside_repeat(%x: !vdir.buffer<1x64xbf16>, %res: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 4 {
    %r = affine.apply affine_map<(d0) -> (d0 * 16)>(%i)
    %c = affine.apply affine_map<(d0) -> (d0 * 16)>(%i)
    %rt = vdir.load %res[0, %c] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x16xbf16>
    %w1 = vdir.load %w[%r, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<16x64xbf16>
    %a = vdir.compute gemv(%w1, %xt) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xbf16>
    %y = vdir.compute add(%a, %rt) : (!vdir.tile<1x16xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<1x16xbf16>
    %s = vdir.store %y, %out[0, %c] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// A gemv that could take the rmsnorm prologue or the silu_mul epilogue takes
// the one that saves more: here the 1x128 output beats the 1x64 normalised x.
// CHECK-LABEL: vdir.program @prologue_or_epilogue
// CHECK:         %xn = vdir.compute rmsnorm(%xt, %gt)
// CHECK-NEXT:    %h = vdir.compute gemv_silu_mul(%wt, %xn, %ut) {operand = 0 : i64}
vdir.program @prologue_or_epilogue(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %u: !vdir.buffer<1x128xbf16>, %w: !vdir.buffer<128x64xbf16>, %out: !vdir.buffer<1x128xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %u[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<128x64xbf16> -> !vdir.tile<128x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute gemv(%wt, %xn) : (!vdir.tile<128x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x128xbf16>
  %h = vdir.compute silu_mul(%a, %ut) : (!vdir.tile<1x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x128xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x128xbf16>, !vdir.buffer<1x128xbf16>
}

// On a tie (1x64 in, 1x64 out) the prologue wins.
// CHECK-LABEL: vdir.program @prologue_on_tie
// CHECK:         %a = vdir.compute rmsnorm_gemv(%wt, %xt, %gt)
// CHECK-NEXT:    %h = vdir.compute silu_mul(%a, %ut)
vdir.program @prologue_on_tie(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %out[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute gemv(%wt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%a, %ut) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// Identical loads of the same region merge (the dynamic offsets are equal
// affine.apply results); the merged-away load's users read the first tile.
// CHECK-LABEL: vdir.program @duplicate_loads
// CHECK:         %w1 = vdir.load %w[%r1, 0]
// CHECK-NOT:     vdir.load
// CHECK:         %a = vdir.compute gemv(%w1, %xt)
// CHECK:         %b = vdir.compute gemv(%w1, %xt)
// LOADS-LABEL: vdir.program @duplicate_loads
// LOADS:         %w1 = vdir.load %w[%r1, 0]
// LOADS-NOT:     %w2 = vdir.load
// LOADS:         %a = vdir.compute gemv(%w1, %xt)
vdir.program @duplicate_loads(%x: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<64x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  vdir.repeat %i = 0 to 2 {
    %r1 = affine.apply affine_map<(d0) -> (d0 * 32)>(%i)
    %w1 = vdir.load %w[%r1, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
    %r2 = affine.apply affine_map<(d0) -> (d0 * 32)>(%i)
    %w2 = vdir.load %w[%r2, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<32x64xbf16>
    %a = vdir.compute gemv(%w1, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
    %b = vdir.compute gemv(%w2, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
    %s1 = vdir.store %a, %out[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
    %s2 = vdir.store %b, %out[0, 32] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x64xbf16>
  }
}

// The later gemv %up prefers its rmsnorm prologue (1x128 normalised input vs a
// 1x64 result), so the earlier gemv %gate takes the silu_mul epilogue instead.
// CHECK-LABEL: vdir.program @later_gemv_prefers_prologue
// CHECK:         %up = vdir.compute rmsnorm_gemv(%wu, %xt, %gt)
// CHECK-NEXT:    %h = vdir.compute gemv_silu_mul(%wg, %xt, %up) {operand = 0 : i64}
vdir.program @later_gemv_prefers_prologue(%x: !vdir.buffer<1x128xbf16>, %g: !vdir.buffer<1x128xbf16>, %w: !vdir.buffer<128x128xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %wg = vdir.load %w[0, 0] : !vdir.buffer<128x128xbf16> -> !vdir.tile<64x128xbf16>
  %wu = vdir.load %w[64, 0] : !vdir.buffer<128x128xbf16> -> !vdir.tile<64x128xbf16>
  %gate = vdir.compute gemv(%wg, %xt) : (!vdir.tile<64x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x128xbf16>
  %up = vdir.compute gemv(%wu, %xn) : (!vdir.tile<64x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<1x64xbf16>
  %h = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %h, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}

// Qwen3's QK-norm into RoPE's prologue: the heads' rmsnorm_rows feeds rope's
// x, so the two are one rmsnorm_rope micro-op (eps kept, the tables after the
// norm's weight).
// CHECK-LABEL: vdir.program @qk_norm_into_rope
// CHECK-NOT:     rmsnorm_rows(
// CHECK:         %qr = vdir.compute rmsnorm_rope(%qt, %gt, %ct, %st) {eps = 1.000000e-06 : f32} on compute : (!vdir.tile<4x128xbf16>, !vdir.tile<1x128xbf16>, !vdir.tile<1x128xf32>, !vdir.tile<1x128xf32>) -> !vdir.tile<4x128xbf16>
// NONE-LABEL: vdir.program @qk_norm_into_rope
// NONE:         %qn = vdir.compute rmsnorm_rows(
// NONE:         %qr = vdir.compute rope(
vdir.program @qk_norm_into_rope(%q: !vdir.buffer<4x128xbf16>, %g: !vdir.buffer<1x128xbf16>, %cos: !vdir.buffer<1x128xf32>, %sin: !vdir.buffer<1x128xf32>, %out: !vdir.buffer<4x128xbf16>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x128xbf16> -> !vdir.tile<4x128xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x128xbf16>
  %ct = vdir.load %cos[0, 0] : !vdir.buffer<1x128xf32> -> !vdir.tile<1x128xf32>
  %st = vdir.load %sin[0, 0] : !vdir.buffer<1x128xf32> -> !vdir.tile<1x128xf32>
  %qn = vdir.compute rmsnorm_rows(%qt, %gt) {eps = 1.0e-06 : f32} : (!vdir.tile<4x128xbf16>, !vdir.tile<1x128xbf16>) -> !vdir.tile<4x128xbf16>
  %qr = vdir.compute rope(%qn, %ct, %st) : (!vdir.tile<4x128xbf16>, !vdir.tile<1x128xf32>, !vdir.tile<1x128xf32>) -> !vdir.tile<4x128xbf16>
  %s = vdir.store %qr, %out[0, 0] : !vdir.tile<4x128xbf16>, !vdir.buffer<4x128xbf16>
}
