// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s

// The f32-accumulator variant of gemv: K split in two, the first half
// producing an f32 partial (p2 bit 2: f32 out), the second taking it as its
// accumulator (p2 bit 1) and rounding to bf16 once. Both run the one gemv
// body (family 1); the epilogue tests the flags at run time: with bit 1 it
// loads the accumulator element (f32, 4 bytes a row, third operand) and adds
// it, keeping the plain sum otherwise (selp, so -0.0 is not turned into
// +0.0); with bit 2 it stores the f32 result (4 bytes a row), else the bf16
// rounding of it (2 bytes a row).

// ISA:      sm 0 compute:
// ISA-NEXT:   0: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[[[PART:[0-9]+]]] p=(16, 64, 2)
// ISA-NEXT:   1: gemv(smem[{{[0-9]+}}], smem[{{[0-9]+}}], smem[[[PART]]]) -> smem[{{[0-9]+}}] p=(16, 64, 1)

// CHECK:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// CHECK-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], [[FAM]], 1;
// CHECK-NEXT: @[[P]] bra.uni $L_fam1_0;
// CHECK-NOT:  $L_fam{{[2-9]}}_
// CHECK-LABEL: $L_fam1_0:
// CHECK:      $L_gemv_nosplit_0:
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_gemv_epi_skip_0;
// CHECK-NEXT: and.b32 [[HASACC:%r[0-9]+]], [[P2:%r[0-9]+]], 1;
// CHECK-NEXT: setp.ne.u32 [[PACC:%p[0-9]+]], [[HASACC]], 0;
// CHECK-NEXT: mad.lo.u32 [[AA:%r[0-9]+]], [[ROW:%r[0-9]+]], 4, {{%r[0-9]+}};
// CHECK-NEXT: mov.f32 [[ACC:%f[0-9]+]], 0f00000000;
// CHECK-NEXT: @[[PACC]] ld.shared.f32 [[ACC]], {{\[}}[[AA]]];
// CHECK-NEXT: add.rn.f32 [[Y:%f[0-9]+]], [[SUM:%f[0-9]+]], [[ACC]];
// CHECK-NEXT: selp.f32 [[YS:%f[0-9]+]], [[Y]], [[SUM]], [[PACC]];
// CHECK-NEXT: and.b32 [[F32:%r[0-9]+]], [[P2]], 2;
// CHECK-NEXT: setp.ne.u32 [[PF32:%p[0-9]+]], [[F32]], 0;
// CHECK-NEXT: mad.lo.u32 [[FA:%r[0-9]+]], [[ROW]], 4, [[OUT:%r[0-9]+]];
// CHECK-NEXT: @[[PF32]] st.shared.f32 {{\[}}[[FA]]], [[YS]];
// CHECK-NEXT: mad.lo.u32 [[HA:%r[0-9]+]], [[ROW]], 2, [[OUT]];
// CHECK-NEXT: cvt.rn.bf16.f32 [[H:%h[0-9]+]], [[YS]];
// CHECK-NEXT: @![[PF32]] st.shared.b16 {{\[}}[[HA]]], [[H]];
// CHECK-NEXT: $L_gemv_epi_skip_0:

vdir.program @gemv_acc(%w: !vdir.buffer<16x128xbf16>, %x: !vdir.buffer<1x128xbf16>, %y: !vdir.buffer<1x16xbf16>) {
  %x0 = vdir.load %x[0, 0] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x64xbf16>
  %x1 = vdir.load %x[0, 64] : !vdir.buffer<1x128xbf16> -> !vdir.tile<1x64xbf16>
  %w0 = vdir.load %w[0, 0] : !vdir.buffer<16x128xbf16> -> !vdir.tile<16x64xbf16>
  %w1 = vdir.load %w[0, 64] : !vdir.buffer<16x128xbf16> -> !vdir.tile<16x64xbf16>
  // columns [0, 64): an f32 partial sum
  %p = vdir.compute gemv(%w0, %x0) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x16xf32>
  // columns [64, 128) plus the partial, rounded to bf16
  %yt = vdir.compute gemv(%w1, %x1, %p) : (!vdir.tile<16x64xbf16>, !vdir.tile<1x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<1x16xbf16>
  %s = vdir.store %yt, %y[0, 0] : !vdir.tile<1x16xbf16>, !vdir.buffer<1x16xbf16>
}
