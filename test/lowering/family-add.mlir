// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=ONLY

// An add-only program emits the add body (family 4) alone: element per
// thread over R x C, both operands widened with cvt.f32.bf16, add.rn.f32,
// one cvt.rn.bf16.f32 per element. No reduction, exp or sqrt is emitted.

// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], [[FAM]], 4;
// CHECK-NEXT: @[[P]] bra $L_fam4_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;

// CHECK-LABEL: $L_fam4_0:
// CHECK-NEXT: mul.lo.u32 [[N:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK:      $L_add_0:
// CHECK-NEXT: setp.ge.u32 {{%p[0-9]+}}, {{%r[0-9]+}}, [[N]];
// CHECK:      cvt.f32.bf16 [[A:%f[0-9]+]], {{%h[0-9]+}};
// CHECK:      cvt.f32.bf16 [[B:%f[0-9]+]], {{%h[0-9]+}};
// CHECK-NEXT: add.rn.f32 [[Y:%f[0-9]+]], [[A]], [[B]];
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], [[Y]];
// CHECK-NEXT: add.u32 [[OA:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: st.shared.b16 {{\[}}[[OA]]], [[YH]];
// CHECK:      $L_add_end_0:
// CHECK-NEXT: bra.uni $L_cp_body_done_0;

// ONLY-NOT:   $L_fam{{[1-35-9]}}_
// ONLY-NOT:   shfl.sync.bfly
// ONLY-NOT:   fma.rn.f32
// ONLY-NOT:   ex2.approx
// ONLY-NOT:   sqrt.rn

vdir.program @add(%a: !vdir.buffer<2x64xbf16>, %b: !vdir.buffer<2x64xbf16>, %y: !vdir.buffer<2x64xbf16>) {
  %at = vdir.load %a[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<2x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<2x64xbf16>
  %yt = vdir.compute add(%at, %bt) : (!vdir.tile<2x64xbf16>, !vdir.tile<2x64xbf16>) -> !vdir.tile<2x64xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<2x64xbf16>, !vdir.buffer<2x64xbf16>
}
