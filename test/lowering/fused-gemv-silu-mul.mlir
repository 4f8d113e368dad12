// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s --check-prefix=ONLY

// A gemv whose only user is a silu_mul fuses into gemv_silu_mul (family 6);
// the kernel holds that body only. Its epilogue (every lane of the row's first
// warp) first rounds the row sum to bf16 (the intermediate tile of the
// unfused pair), reads the other operand's element, picks silu's argument
// by p2 (0: silu(gemv) * other, 1: silu(other) * gemv) with selp, computes
// silu through ex2.approx and rounds the product to bf16.

// ISA:      sm 0 compute:
// ISA-NEXT:   0: gemv_silu_mul(smem[{{[0-9]+}}], smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(
// ISA-NOT:    {{^ *[0-9]+: (silu_mul|gemv)\(}}

// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], {{%r[0-9]+}}, 6;
// CHECK-NEXT: @[[P]] bra.uni $L_fam6_0;
// CHECK-LABEL: $L_fam6_0:
// CHECK:      $L_gemv_main_0:
// CHECK:      fma.rn.f32
// CHECK:      shfl.sync.bfly.b32 {{%f[0-9]+}}, {{%f[0-9]+}}, 16, 31, 4294967295;
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_gemv_epi_skip_0;
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], [[SUM:%f[0-9]+]];
// CHECK-NEXT: cvt.f32.bf16 [[Y:%f[0-9]+]], [[YH]];
// CHECK-NEXT: mad.lo.u32 [[OA:%r[0-9]+]], {{%r[0-9]+}}, 2, {{%r[0-9]+}};
// CHECK-NEXT: ld.shared.b16 [[OH:%h[0-9]+]], {{\[}}[[OA]]];
// CHECK-NEXT: cvt.f32.bf16 [[O:%f[0-9]+]], [[OH]];
// CHECK-NEXT: setp.eq.u32 [[FIRST:%p[0-9]+]], {{%r[0-9]+}}, 0;
// CHECK-NEXT: selp.f32 [[SA:%f[0-9]+]], [[Y]], [[O]], [[FIRST]];
// CHECK-NEXT: selp.f32 [[MA:%f[0-9]+]], [[O]], [[Y]], [[FIRST]];
// CHECK-NEXT: mul.rn.f32 [[T:%f[0-9]+]], [[SA]], 0fBFB8AA3B;
// CHECK-NEXT: ex2.approx.ftz.f32 [[E:%f[0-9]+]], [[T]];
// CHECK-NEXT: add.rn.f32 [[D:%f[0-9]+]], [[E]], 0f3F800000;
// CHECK-NEXT: div.rn.f32 [[S:%f[0-9]+]], [[SA]], [[D]];
// CHECK-NEXT: mul.rn.f32 [[R:%f[0-9]+]], [[S]], [[MA]];
// CHECK-NEXT: mad.lo.u32 [[RA:%r[0-9]+]], {{%r[0-9]+}}, 2, {{%r[0-9]+}};
// CHECK-NEXT: cvt.rn.bf16.f32 [[RH:%h[0-9]+]], [[R]];
// CHECK-NEXT: st.shared.b16 {{\[}}[[RA]]], [[RH]];
// CHECK-NEXT: $L_gemv_epi_skip_0:

// ONLY-NOT:   $L_fam{{[1-57-9]}}_
// ONLY-NOT:   sqrt.rn

vdir.program @gemv_silu_mul(%x: !vdir.buffer<1x64xbf16>, %u: !vdir.buffer<1x32xbf16>, %w: !vdir.buffer<32x64xbf16>, %y: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %ut = vdir.load %u[0, 0] : !vdir.buffer<1x32xbf16> -> !vdir.tile<1x32xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %h = vdir.compute silu_mul(%a, %ut) : (!vdir.tile<1x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xbf16>
  %s = vdir.store %h, %y[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x32xbf16>
}
