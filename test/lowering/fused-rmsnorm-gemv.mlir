// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s --check-prefix=ONLY

// rmsnorm feeding a gemv fuses into rmsnorm_gemv (family 5), and the kernel
// then holds that body only: neither the plain gemv nor the rmsnorm body.
// The body first computes 1/sqrt(mean(x^2) + eps) over the group (as
// rmsnorm does), then runs the gemv row loop reading three 16-byte streams
// per chunk (w, x, and the norm weight g) and normalising x on the fly:
// x * inv * g, rounded to bf16 element by element (cvt.rn.bf16.f32 then
// cvt.f32.bf16) before the fma, as the unfused rmsnorm would store it. The
// epilogue rounds the row sum once more to the bf16 output.

// ISA:      sm 0 compute:
// ISA-NEXT:   0: rmsnorm_gemv({{.*}}) -> smem[{{[0-9]+}}] p=(32, 64, 0) f0=1e-05
// ISA-NOT:    {{^ *[0-9]+: (rmsnorm|gemv)\(}}

// CHECK-LABEL: $L_role_compute_0:
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], {{%r[0-9]+}}, 5;
// CHECK-NEXT: @[[P]] bra.uni $L_fam5_0;
// CHECK-LABEL: $L_fam5_0:
// CHECK:      $L_rms_sq_0:
// CHECK:      barrier.sync 1, 256;
// CHECK:      sqrt.rn.f32 [[SQ:%f[0-9]+]], {{%f[0-9]+}};
// CHECK-NEXT: div.rn.f32 [[INV:%f[0-9]+]], 0f3F800000, [[SQ]];
// The grouped passes (family-gemv.mlir: four rows, then two) normalise each
// chunk of x once for the group; below, the loop of one row per warp.
// CHECK:      $L_gemv_quad_0:
// CHECK:      $L_gemv_pair_0:
// CHECK:      $L_gemv_main_2:
// CHECK:      shl.b32 [[OFF:%r[0-9]+]], {{%r[0-9]+}}, 4;
// CHECK-NEXT: add.u32 [[WA:%r[0-9]+]], {{%r[0-9]+}}, [[OFF]];
// CHECK-NEXT: add.u32 [[XA:%r[0-9]+]], {{%r[0-9]+}}, [[OFF]];
// CHECK-NEXT: add.u32 [[GA:%r[0-9]+]], {{%r[0-9]+}}, [[OFF]];
// CHECK-NEXT: ld.shared.v4.b32 {[[W0:%r[0-9]+]], {{.*}}}, {{\[}}[[WA]]];
// CHECK-COUNT-3: ld.shared.v4.b32 {{.*}}, {{\[}}[[WA]]+{{[0-9]+}}];
// CHECK-NEXT: ld.shared.v4.b32 {[[X0:%r[0-9]+]], {{.*}}}, {{\[}}[[XA]]];
// CHECK-COUNT-3: ld.shared.v4.b32 {{.*}}, {{\[}}[[XA]]+{{[0-9]+}}];
// CHECK-NEXT: ld.shared.v4.b32 {[[G0:%r[0-9]+]], {{.*}}}, {{\[}}[[GA]]];
// CHECK-COUNT-3: ld.shared.v4.b32 {{.*}}, {{\[}}[[GA]]+{{[0-9]+}}];
// Weight pair, x pair, g pair widened; then x * inv * g, rounded to bf16.
// CHECK-NEXT: shl.b32 {{%r[0-9]+}}, [[W0]], 16;
// CHECK:      shl.b32 {{%r[0-9]+}}, [[X0]], 16;
// CHECK:      mov.b32 [[XL:%f[0-9]+]], {{%r[0-9]+}};
// CHECK:      shl.b32 {{%r[0-9]+}}, [[G0]], 16;
// CHECK:      mov.b32 [[GL:%f[0-9]+]], {{%r[0-9]+}};
// CHECK:      mul.rn.f32 [[T1:%f[0-9]+]], [[XL]], [[INV]];
// CHECK-NEXT: mul.rn.f32 [[T2:%f[0-9]+]], [[T1]], [[GL]];
// CHECK-NEXT: cvt.rn.bf16.f32 [[H:%h[0-9]+]], [[T2]];
// CHECK-NEXT: cvt.f32.bf16 [[XN:%f[0-9]+]], [[H]];
// CHECK:      fma.rn.f32 {{%f[0-9]+}}, {{%f[0-9]+}}, [[XN]], {{%f[0-9]+}};
// CHECK:      shfl.sync.bfly.b32
// Epilogue: a single rounding of the row sum to bf16.
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_gemv_epi_skip_0;
// CHECK-NEXT: mad.lo.u32 [[YA:%r[0-9]+]], {{%r[0-9]+}}, 2, {{%r[0-9]+}};
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], {{%f[0-9]+}};
// CHECK-NEXT: st.shared.b16 {{\[}}[[YA]]], [[YH]];
// CHECK-NEXT: $L_gemv_epi_skip_0:

// ONLY-NOT:   $L_fam{{[1-46-9]}}_
// ONLY-NOT:   ex2.approx

vdir.program @rmsnorm_gemv(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %w: !vdir.buffer<32x64xbf16>, %y: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x64xbf16>
  %xn = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %yt = vdir.compute gemv(%wt, %xn) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x32xbf16>
}
