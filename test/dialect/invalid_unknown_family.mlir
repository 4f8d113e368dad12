// RUN: vdir-opt %s --print-diagnostics | filecheck %s

vdir.program @p(%a: !vdir.buffer<1x8xbf16>) {
  %t = vdir.load %a[0, 0] : !vdir.buffer<1x8xbf16> -> !vdir.tile<1x8xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: unknown op family 'softmax' (known: add, argmax_final, argmax_partial, attn_block, attn_merge, attn_self, fixed_add, gemv, gemv_add, gemv_silu_mul, rmsnorm, rmsnorm_gemv, rmsnorm_rope, rmsnorm_rows, rope, silu_mul, slice, sum_rows, vecmat, zeros)
  %u = vdir.compute softmax(%t) : (!vdir.tile<1x8xbf16>) -> !vdir.tile<1x8xbf16>
  %s = vdir.store %u, %a[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}
