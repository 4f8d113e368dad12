// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=ONLY

// An rmsnorm-only program emits the rmsnorm body (family 2) alone. Threads
// take elements round-robin (stride 256): the sum of squares with
// fma.rn.f32 over bf16 widened by cvt.f32.bf16, a butterfly per warp, the
// eight warp sums through the scratch at base + 256 behind barrier 1 and
// added in a fixed order; then mean, + eps (f0), sqrt.rn and 1 / s with
// div.rn (matching the reference: no rsqrt.approx), and one
// cvt.rn.bf16.f32 per element of x * inv * weight.

// CHECK:      mov.u32 [[BASE:%r[0-9]+]], vdir_smem;
// CHECK:      mov.b32 [[EPS:%f[0-9]+]], {{%r[0-9]+}};
// CHECK-NEXT: setp.eq.u32 [[P:%p[0-9]+]], {{%r[0-9]+}}, 2;
// CHECK-NEXT: @[[P]] bra.uni $L_fam2_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;

// CHECK-LABEL: $L_fam2_0:
// CHECK-NEXT: mov.f32 [[ACC:%f[0-9]+]], 0f00000000;
// CHECK:      $L_rms_sq_0:
// CHECK:      ld.shared.b16 [[H:%h[0-9]+]], [{{%r[0-9]+}}];
// CHECK-NEXT: cvt.f32.bf16 [[V:%f[0-9]+]], [[H]];
// CHECK-NEXT: fma.rn.f32 [[ACC]], [[V]], [[V]], [[ACC]];
// CHECK-NEXT: add.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 256;
// CHECK:      $L_rms_sq_end_0:
// CHECK-NEXT: shfl.sync.bfly.b32 {{%f[0-9]+}}, [[ACC]], 16, 31, 4294967295;
// CHECK-COUNT-4: shfl.sync.bfly.b32
// CHECK:      @{{%p[0-9]+}} st.shared.f32 [{{%r[0-9]+}}+256], {{%f[0-9]+}};
// CHECK-NEXT: barrier.sync 1, 256;
// CHECK-NEXT: ld.shared.f32 {{%f[0-9]+}}, {{\[}}[[BASE]]+256];
// CHECK-NEXT: ld.shared.f32 {{%f[0-9]+}}, {{\[}}[[BASE]]+260];
// CHECK:      ld.shared.f32 [[W7:%f[0-9]+]], {{\[}}[[BASE]]+284];
// CHECK-NEXT: add.rn.f32 [[TOT:%f[0-9]+]], {{%f[0-9]+}}, [[W7]];
// CHECK-NEXT: cvt.rn.f32.u32 [[NF:%f[0-9]+]], [[N:%r[0-9]+]];
// CHECK-NEXT: div.rn.f32 [[MEAN:%f[0-9]+]], [[TOT]], [[NF]];
// CHECK-NEXT: add.rn.f32 [[T:%f[0-9]+]], [[MEAN]], [[EPS]];
// CHECK-NEXT: sqrt.rn.f32 [[SQ:%f[0-9]+]], [[T]];
// CHECK-NEXT: div.rn.f32 [[INV:%f[0-9]+]], 0f3F800000, [[SQ]];

// CHECK:      $L_rmsnorm_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, [[N]];
// CHECK:      cvt.f32.bf16 [[X:%f[0-9]+]], {{%h[0-9]+}};
// CHECK:      cvt.f32.bf16 [[G:%f[0-9]+]], {{%h[0-9]+}};
// CHECK-NEXT: mul.rn.f32 [[XI:%f[0-9]+]], [[X]], [[INV]];
// CHECK-NEXT: mul.rn.f32 [[Y:%f[0-9]+]], [[XI]], [[G]];
// CHECK-NEXT: add.u32 [[OA:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], [[Y]];
// CHECK-NEXT: st.shared.b16 {{\[}}[[OA]]], [[YH]];
// CHECK:      $L_rmsnorm_end_0:
// CHECK-NEXT: bra.uni $L_cp_body_done_0;

// ONLY-NOT:   $L_fam{{[13-9]}}_
// ONLY-NOT:   rsqrt
// ONLY-NOT:   ex2.approx

vdir.program @rmsnorm(%x: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x64xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %yt = vdir.compute rmsnorm(%xt, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
