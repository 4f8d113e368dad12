// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=ONLY

// An add-only program emits the add body (family 4) alone: element per
// thread over R x C, both operands widened with cvt.f32.bf16, add.rn.f32,
// one cvt.rn.bf16.f32 per element. No reduction, exp or sqrt is emitted.
// The flags of p2 (f32 operands: 1, f32 result: 2) pick the loop: the bf16
// one behind a single test, then one loop per other form, each with 4-byte
// accesses where its dtype is f32.

// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], [[FAM]], 4;
// CHECK-NEXT: @[[P]] bra.uni $L_fam4_0;
// CHECK-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;

// CHECK-LABEL: $L_fam4_0:
// CHECK-NEXT: and.b32 [[FORM:%r[0-9]+]], {{%r[0-9]+}}, 3;
// CHECK-NEXT: setp.ne.u32 [[WIDE:%p[0-9]+]], [[FORM]], 0;
// CHECK-NEXT: @[[WIDE]] bra $L_add_wide_0;
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
// CHECK-NEXT: bra.uni $L_add_done_0;
// CHECK-NEXT: $L_add_wide_0:
// CHECK-NEXT: setp.eq.u32 [[P2:%p[0-9]+]], [[FORM]], 2;
// CHECK-NEXT: @[[P2]] bra $L_add_bf16_f32_0;
// CHECK-NEXT: setp.eq.u32 [[P1:%p[0-9]+]], [[FORM]], 1;
// CHECK-NEXT: @[[P1]] bra $L_add_f32_bf16_0;
// CHECK-NEXT: setp.eq.u32 [[P3:%p[0-9]+]], [[FORM]], 3;
// CHECK-NEXT: @[[P3]] bra $L_add_f32_f32_0;

// bf16 operands, f32 result: 2-byte loads, a 4-byte store of the f32 sum.
// CHECK-LABEL: $L_add_bf16_f32_loop_0:
// CHECK:      add.rn.f32 [[S:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}};
// CHECK-NEXT: mul.lo.u32 [[O4:%r[0-9]+]], {{%r[0-9]+}}, 4;
// CHECK-NEXT: add.u32 [[SA:%r[0-9]+]], {{%r[0-9]+}}, [[O4]];
// CHECK-NEXT: st.shared.f32 {{\[}}[[SA]]], [[S]];

// f32 operands, bf16 result: 4-byte loads, one rounding.
// CHECK-LABEL: $L_add_f32_bf16_loop_0:
// CHECK:      ld.shared.f32 [[X:%f[0-9]+]],
// CHECK:      ld.shared.f32 [[Z:%f[0-9]+]],
// CHECK-NEXT: add.rn.f32 [[T:%f[0-9]+]], [[X]], [[Z]];
// CHECK-NEXT: mul.lo.u32 {{%r[0-9]+}}, {{%r[0-9]+}}, 2;
// CHECK-NEXT: cvt.rn.bf16.f32 [[TH:%h[0-9]+]], [[T]];

// f32 operands and result.
// CHECK-LABEL: $L_add_f32_f32_loop_0:
// CHECK:      add.rn.f32 [[U:%f[0-9]+]], {{%f[0-9]+}}, {{%f[0-9]+}};
// CHECK-NEXT: add.u32 [[UA:%r[0-9]+]], {{%r[0-9]+}}, {{%r[0-9]+}};
// CHECK-NEXT: st.shared.f32 {{\[}}[[UA]]], [[U]];
// CHECK:      $L_add_done_0:
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
