// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t isa | filecheck %s --check-prefix=ISA
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=true}' -t ptx | filecheck %s --check-prefix=ONLY
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=NOFUSE

// A residual add of a gemv result fuses into gemv_add (family 7): the
// epilogue rounds the row sum to bf16, adds the residual element (widened
// with cvt.f32.bf16) and rounds again. Without fusion the same program
// needs the gemv and add bodies (families 1 and 4) instead.

// ISA:      sm 0 compute:
// ISA-NEXT:   0: gemv_add(smem[{{[0-9]+}}], smem[{{[0-9]+}}], smem[{{[0-9]+}}]) -> smem[{{[0-9]+}}] p=(32, 64, 0) wait(
// ISA-NOT:    {{^ *[0-9]+: (add|gemv)\(}}

// CHECK:      setp.eq.u32 [[P:%p[0-9]+]], {{%r[0-9]+}}, 7;
// CHECK-NEXT: @[[P]] bra.uni $L_fam7_0;
// CHECK-LABEL: $L_fam7_0:
// CHECK:      $L_gemv_main_0:
// CHECK:      fma.rn.f32
// CHECK:      shfl.sync.bfly.b32
// CHECK:      @!{{%p[0-9]+}} bra.uni $L_gemv_epi_skip_0;
// CHECK-NEXT: cvt.rn.bf16.f32 [[YH:%h[0-9]+]], {{%f[0-9]+}};
// CHECK-NEXT: cvt.f32.bf16 [[Y:%f[0-9]+]], [[YH]];
// CHECK-NEXT: mad.lo.u32 [[RA:%r[0-9]+]], {{%r[0-9]+}}, 2, {{%r[0-9]+}};
// CHECK-NEXT: ld.shared.b16 [[RH:%h[0-9]+]], {{\[}}[[RA]]];
// CHECK-NEXT: cvt.f32.bf16 [[R:%f[0-9]+]], [[RH]];
// CHECK-NEXT: add.rn.f32 [[SUM:%f[0-9]+]], [[Y]], [[R]];
// CHECK-NEXT: mad.lo.u32 [[OA:%r[0-9]+]], {{%r[0-9]+}}, 2, {{%r[0-9]+}};
// CHECK-NEXT: cvt.rn.bf16.f32 [[OH:%h[0-9]+]], [[SUM]];
// CHECK-NEXT: st.shared.b16 {{\[}}[[OA]]], [[OH]];
// CHECK-NEXT: $L_gemv_epi_skip_0:

// ONLY-NOT:   $L_fam{{[1-68-9]}}_
// ONLY-NOT:   ex2.approx
// ONLY-NOT:   sqrt.rn

// NOFUSE:     @{{%p[0-9]+}} bra.uni $L_fam1_0;
// NOFUSE:     @{{%p[0-9]+}} bra.uni $L_fam4_0;
// NOFUSE:     $L_fam1_0:
// NOFUSE:     $L_fam4_0:
// NOFUSE-NOT: $L_fam7_

vdir.program @gemv_add(%x: !vdir.buffer<1x64xbf16>, %r: !vdir.buffer<1x32xbf16>, %w: !vdir.buffer<32x64xbf16>, %y: !vdir.buffer<1x32xbf16>) {
  %xt = vdir.load %x[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %rt = vdir.load %r[0, 0] : !vdir.buffer<1x32xbf16> -> !vdir.tile<1x32xbf16>
  %wt = vdir.load %w[0, 0] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x64xbf16>
  %a = vdir.compute gemv(%wt, %xt) : (!vdir.tile<32x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x32xbf16>
  %h = vdir.compute add(%a, %rt) : (!vdir.tile<1x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xbf16>
  %s = vdir.store %h, %y[0, 0] : !vdir.tile<1x32xbf16>, !vdir.buffer<1x32xbf16>
}
