// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1 fuse=false}' -t ptx | filecheck %s --check-prefix=NOFUSE
// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=1}' -t ptx | filecheck %s --check-prefix=FUSE

// The compute engine dispatches on the family opcode (word 0 bits 8..15)
// with one compare-and-branch per family the program's compute instructions
// use, in opcode order, followed by the unknown-family report (error code
// 2); the bodies follow in the same order. An MLP block unfused uses gemv
// (1), rmsnorm (2), silu_mul (3) and add (4); fused, silu_mul and the
// residual add move into gemv epilogues (6, 7) while the rmsnorm, which has
// two users, stays.

// NOFUSE:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// NOFUSE-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// NOFUSE:      setp.eq.u32 [[P1:%p[0-9]+]], [[FAM]], 1;
// NOFUSE-NEXT: @[[P1]] bra.uni $L_fam1_0;
// NOFUSE-NEXT: setp.eq.u32 [[P2:%p[0-9]+]], [[FAM]], 2;
// NOFUSE-NEXT: @[[P2]] bra.uni $L_fam2_0;
// NOFUSE-NEXT: setp.eq.u32 [[P3:%p[0-9]+]], [[FAM]], 3;
// NOFUSE-NEXT: @[[P3]] bra.uni $L_fam3_0;
// NOFUSE-NEXT: setp.eq.u32 [[P4:%p[0-9]+]], [[FAM]], 4;
// NOFUSE-NEXT: @[[P4]] bra.uni $L_fam4_0;
// NOFUSE-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;
// NOFUSE:      bra.uni $L_cp_done_0;
// NOFUSE-NEXT: $L_fam1_0:
// NOFUSE:      $L_gemv_pass_0:
// NOFUSE:      bra.uni $L_cp_body_done_0;
// NOFUSE-NEXT: $L_fam2_0:
// NOFUSE:      $L_rmsnorm_0:
// NOFUSE:      bra.uni $L_cp_body_done_0;
// NOFUSE-NEXT: $L_fam3_0:
// NOFUSE:      $L_silu_mul_0:
// NOFUSE:      bra.uni $L_cp_body_done_0;
// NOFUSE-NEXT: $L_fam4_0:
// NOFUSE:      $L_add_0:
// NOFUSE:      bra.uni $L_cp_body_done_0;
// NOFUSE-NEXT: $L_cp_not_run_0:
// NOFUSE-NEXT: @{{%p[0-9]+}} bra.uni $L_cp_done_0;
// NOFUSE-NEXT: $L_cp_body_done_0:
// NOFUSE-NOT:  $L_fam

// FUSE:      shr.u32 [[F8:%r[0-9]+]], {{%r[0-9]+}}, 8;
// FUSE-NEXT: and.b32 [[FAM:%r[0-9]+]], [[F8]], 255;
// FUSE:      setp.eq.u32 [[P1:%p[0-9]+]], [[FAM]], 1;
// FUSE-NEXT: @[[P1]] bra.uni $L_fam1_0;
// FUSE-NEXT: setp.eq.u32 [[P2:%p[0-9]+]], [[FAM]], 2;
// FUSE-NEXT: @[[P2]] bra.uni $L_fam2_0;
// FUSE-NEXT: setp.eq.u32 [[P6:%p[0-9]+]], [[FAM]], 6;
// FUSE-NEXT: @[[P6]] bra.uni $L_fam6_0;
// FUSE-NEXT: setp.eq.u32 [[P7:%p[0-9]+]], [[FAM]], 7;
// FUSE-NEXT: @[[P7]] bra.uni $L_fam7_0;
// FUSE-NEXT: atom.relaxed.gpu.global.cas.b32 {{%r[0-9]+}}, [{{%rd[0-9]+}}], 0, 2;
// FUSE:      $L_fam1_0:
// FUSE:      $L_fam2_0:
// FUSE:      $L_fam6_0:
// FUSE:      $L_fam7_0:
// FUSE:      $L_cp_body_done_0:
// FUSE-NOT:  $L_fam

vdir.program @mlp(%h: !vdir.buffer<1x64xbf16>, %g: !vdir.buffer<1x64xbf16>, %wg: !vdir.buffer<64x64xbf16>, %wu: !vdir.buffer<64x64xbf16>, %wd: !vdir.buffer<64x64xbf16>, %act: !vdir.buffer<1x64xbf16>, %out: !vdir.buffer<1x64xbf16>) {
  %x = vdir.load %h[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %gt = vdir.load %g[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  %xn = vdir.compute rmsnorm(%x, %gt) {eps = 1.0e-05 : f32} : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %wgt = vdir.load %wg[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %gate = vdir.compute gemv(%wgt, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %wut = vdir.load %wu[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %up = vdir.compute gemv(%wut, %xn) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %a = vdir.compute silu_mul(%gate, %up) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %t = vdir.store %a, %act[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
  %wdt = vdir.load %wd[0, 0] : !vdir.buffer<64x64xbf16> -> !vdir.tile<64x64xbf16>
  %d = vdir.compute gemv(%wdt, %a) : (!vdir.tile<64x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %o = vdir.compute add(%d, %x) : (!vdir.tile<1x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<1x64xbf16>
  %t2 = vdir.store %o, %out[0, 0] : !vdir.tile<1x64xbf16>, !vdir.buffer<1x64xbf16>
}
