// RUN: vdir-opt %s -p 'vdir-pipeline{num-sms=2 fuse=false}' -t ptx | filecheck %s
// RUN: vdir-opt %S/../transforms/Inputs/mlp_small.mlir -p 'vdir-pipeline{num-sms=2}' -t ptx | filecheck %s --check-prefix=PLAIN

// A reducing store (isa.REDUCE = 1 or 2, word 31: the last of the vector load
// at byte 112) on the store engine. The path is in the kernel only when the
// program has one (a program without keeps its text: the second RUN line).
// It is tested before the tensor path: a reducing store never goes through
// a tensor map. After the runtime offset, with 16-byte aligned rows, the
// lanes issue one bulk reduction per row (lane i: rows i, i + 32, ..), after
// fence.proxy.async.shared::cta (the compute threads' tile writes before the
// copy engine reads them); then, as after a tensor store, each lane commits
// its bulk group and, unless the store is quiet, waits for it and fences the
// async proxy's global writes against the generic proxy before the release
// (sched-store.mlir).
// Unaligned rows fall back to red.global.add.f32 per element. The code picks
// the adds: 1 (REDUCE_ADD) f32, 2 (REDUCE_ADD_I64) u64 (an i64 sum's bits);
// both paths are in a kernel whose program reduces.

// CHECK-LABEL: $L_role_store_0:
// CHECK:       ld.shared.v4.b32 {{{%r[0-9]+}}, {{%r[0-9]+}}, {{%r[0-9]+}}, [[REDUCE:%r[0-9]+]]}, [{{%r[0-9]+}}+112];
// CHECK-NEXT:  setp.ne.u32 [[RED:%p[0-9]+]], [[REDUCE]], 0;
// CHECK:       @[[RED]] bra.uni $L_st_plain_0;
// CHECK:       cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group
// CHECK:       $L_st_plain_0:
// CHECK:       @![[RED]] bra.uni $L_st_overwrite_0;
// CHECK-NEXT:  setp.ne.u32 [[F32:%p[0-9]+]], [[CODE:%r[0-9]+]], 1;
// CHECK-NEXT:  @[[F32]] bra.uni $L_st_other_reduction_0;
// CHECK:       @!{{%p[0-9]+}} bra $L_red_unaligned_0;
// CHECK-NEXT:  fence.proxy.async.shared::cta;
// CHECK:       $L_red_rows_0:
// CHECK:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [{{%rd[0-9]+}}], [{{%r[0-9]+}}], {{%r[0-9]+}};
// CHECK:       $L_red_rows_end_0:
// CHECK-NEXT:  bra.uni $L_red_done_0;
// CHECK-NEXT:  $L_red_unaligned_0:
// CHECK:       ld.shared.f32 [[V:%f[0-9]+]], [{{%r[0-9]+}}];
// CHECK:       red.global.add.f32 [{{%rd[0-9]+}}], [[V]];
// CHECK:       $L_red_done_0:
// CHECK-NEXT:  bar.warp.sync 4294967295;
// CHECK-NEXT:  bra.uni $L_st_next_0;
// CHECK-NEXT:  $L_st_other_reduction_0:
// CHECK-NEXT:  setp.ne.u32 [[I64:%p[0-9]+]], [[CODE]], 2;
// CHECK-NEXT:  @[[I64]] bra.uni $L_st_other_reduction_1;
// CHECK:       cp.reduce.async.bulk.global.shared::cta.bulk_group.add.u64 [{{%rd[0-9]+}}], [{{%r[0-9]+}}], {{%r[0-9]+}};
// CHECK:       ld.shared.u64 [[W:%rd[0-9]+]], [{{%r[0-9]+}}];
// CHECK:       red.global.add.u64 [{{%rd[0-9]+}}], [[W]];
// CHECK:       bra.uni $L_st_next_0;
// CHECK-NEXT:  $L_st_other_reduction_1:
// CHECK-NEXT:  $L_st_overwrite_0:
// CHECK:       $L_st_next_0:
// CHECK-NEXT:  cp.async.bulk.commit_group;
// CHECK:       $L_st_complete_0:
// CHECK-NEXT:  cp.async.bulk.wait_group 0;
// CHECK-NEXT:  fence.proxy.async.global;

// PLAIN-LABEL: $L_role_store_0:
// PLAIN-NOT:   cp.reduce
// PLAIN-NOT:   red.global.add.f32
// PLAIN:       $L_st_done_0:

vdir.program @split_k(%w: !vdir.buffer<32x64xbf16>, %x: !vdir.buffer<1x64xbf16>, %y: !vdir.buffer<1x32xf32>) {
  vdir.repeat %s = 0 to 2 {
    %k = affine.apply affine_map<(d0) -> (d0 * 32)> (%s)
    %xs = vdir.load %x[0, %k] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x32xbf16>
    %wt = vdir.load %w[0, %k] : !vdir.buffer<32x64xbf16> -> !vdir.tile<32x32xbf16>
    %pt = vdir.compute gemv(%wt, %xs) : (!vdir.tile<32x32xbf16>, !vdir.tile<1x32xbf16>) -> !vdir.tile<1x32xf32>
    %added = vdir.store %pt, %y[0, 0] reduce add : !vdir.tile<1x32xf32>, !vdir.buffer<1x32xf32>
  }
}
