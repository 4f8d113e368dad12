// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=ONLY

// A silu_mul-only program emits the silu_mul body (family 3) alone:
// element per thread over R x C (p0 * p1), bf16 operands widened with
// cvt.f32.bf16, silu(g) = g / (1 + 2^(-g * log2 e)) with ex2.approx.ftz
// (-log2 e = 0fBFB8AA3B), times up, one cvt.rn.bf16.f32 per element.
// Elementwise bodies need no warp reduction and no fma.

// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], [[FAM]], 3;
// CHECK-NEXT: @[[P]] bra.uni $L_fam3_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;

// CHECK-LABEL: $L_fam3_0:
// CHECK-NEXT: mul.lo.u32 [[N:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK:      $L_silu_mul_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, [[N]];
// CHECK:      ld.shared.b16 [[HG:%h[0-9]+]], [{{%r[0-9]+}}];
// CHECK-NEXT: cvt.f32.bf16 [[G:%f[0-9]+]], [[HG]];
// CHECK:      ld.shared.b16 [[HU:%h[0-9]+]], [{{%r[0-9]+}}];
// CHECK-NEXT: cvt.f32.bf16 [[U:%f[0-9]+]], [[HU]];
// CHECK-NEXT: mul.rn.f32 [[T:%f[0-9]+]], [[G]], 0fBFB8AA3B;
// CHECK-NEXT: ex2.approx.ftz.f32 [[E:%f[0-9]+]], [[T]];
// CHECK-NEXT: add.rn.f32 [[D:%f[0-9]+]], [[E]], 0f3F800000;
// CHECK-NEXT: div.rn.f32 [[S:%f[0-9]+]], [[G]], [[D]];
// CHECK-NEXT: mul.rn.f32 [[Y:%f[0-9]+]], [[S]], [[U]];
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], [[Y]];
// CHECK-NEXT: add.u32 [[OA:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: st.shared.b16 {{\[}}[[OA]]], [[YH]];
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 256;
// CHECK:      $L_silu_mul_end_0:
// CHECK-NEXT: bra.uni $L_cp_body_done_0;

// ONLY-NOT:   $L_fam{{[124-9]}}_
// ONLY-NOT:   shfl.sync.bfly
// ONLY-NOT:   fma.rn.f32
// ONLY-NOT:   sqrt.rn

vdir.program @silu_mul(%g: !vdir.buffer<1x64xbf16>, %u: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %u[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %yt = vdir.compute silu_mul(%gt, %ut) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
