// RUN: %roundtrip
// RUN: vdir-opt %s -t ptx | filecheck %s --check-prefix=PTX --match-full-lines

// The ptx dialect: a module with one kernel, written in the generic form.
// Each instruction has its modifiers (`mods`), its PTX operand list as typed
// slots (`slots`: #ptx.res the next result, #ptx.reg the next SSA operand,
// integer and f32 immediates, #ptx.sreg a special register, a symbol,
// #ptx.addr an address in a state space, #ptx.vec a vector, #ptx.tensor_addr
// a tensor map and its coordinates) and an optional guard predicate
// (`negated` for @!). A `ptx.branchtargets` list, under a label of its own,
// names where an indexed branch (`brx.idx`) goes by index. It parses,
// verifies, prints back, and prints as PTX.

"ptx.module"() <{version = "8.0", target = "sm_90a", address_size = #builtin.int<64>}> ({
  "ptx.global"() <{sym_name = "smem", space = "shared", elem = "b8", align = #builtin.int<1024>, size = #builtin.int<-1>}> : () -> ()
  "ptx.kernel"() <{sym_name = "k", params = ["u64 p_out", "u32 p_n"], maxntid = #builtin.int<32>}> ({
    %out = "ptx.ld"() <{mods = ["param", "u64"], slots = [#ptx.res, #ptx.addr<"param", @p_out, 0>], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u64>
    %n = "ptx.ld"() <{mods = ["param", "u32"], slots = [#ptx.res, #ptx.addr<"param", @p_n, 0>], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
    %tid = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, #ptx.sreg<"%tid.x">], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
    %base = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, @smem], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
    %p = "ptx.setp"(%tid, %n) <{mods = ["ge", "u32"], slots = [#ptx.res, #ptx.reg, #ptx.reg], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<pred>
    "ptx.bra"(%p) <{mods = [], slots = [@"$L_done"], operandSegmentSizes = array<i32: 0, 1>}> : (!ptx.reg<pred>) -> ()
    %v0, %v1, %v2, %v3 = "ptx.ld"(%base) <{mods = ["shared", "v4", "b32"], slots = [#ptx.vec<[#ptx.res, #ptx.res, #ptx.res, #ptx.res]>, #ptx.addr<"shared", #ptx.reg, 16>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> (!ptx.reg<b32>, !ptx.reg<b32>, !ptx.reg<b32>, !ptx.reg<b32>)
    %f = "ptx.mov"() <{mods = ["f32"], slots = [#ptx.res, 5.000000e-01 : f32], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<f32>
    "ptx.add"(%f, %f, %p) <{mods = ["f32"], slots = [#ptx.reg, #ptx.reg, 1.000000e+00 : f32], negated, operandSegmentSizes = array<i32: 2, 1>}> : (!ptx.reg<f32>, !ptx.reg<f32>, !ptx.reg<pred>) -> ()
    %w = "ptx.mul"(%tid) <{mods = ["wide", "u32"], slots = [#ptx.res, #ptx.reg, 4 : i64], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u64>
    %a = "ptx.add"(%out, %w) <{mods = ["u64"], slots = [#ptx.res, #ptx.reg, #ptx.reg], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u64>, !ptx.reg<u64>) -> !ptx.reg<u64>
    "ptx.st"(%a, %f) <{mods = ["global", "f32"], slots = [#ptx.addr<"global", #ptx.reg, 8>, #ptx.reg], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u64>, !ptx.reg<f32>) -> ()
    "ptx.st"(%base, %v0, %v1, %v2) <{mods = ["shared", "v4", "b32"], slots = [#ptx.addr<"shared", #ptx.reg, 0>, #ptx.vec<[#ptx.reg, #ptx.reg, #ptx.reg, 0 : i64]>], operandSegmentSizes = array<i32: 4, 0>}> : (!ptx.reg<u32>, !ptx.reg<b32>, !ptx.reg<b32>, !ptx.reg<b32>) -> ()
    %pair = "ptx.mov"(%v0, %v1) <{mods = ["b64"], slots = [#ptx.res, #ptx.vec<[#ptx.reg, #ptx.reg]>], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<b32>, !ptx.reg<b32>) -> !ptx.reg<b64>
    "ptx.cp"(%pair, %tid, %n, %tid, %base) <{mods = ["async", "bulk", "tensor", "3d", "global", "shared::cta", "tile", "bulk_group"], slots = [#ptx.tensor_addr<#ptx.reg, #ptx.vec<[#ptx.reg, #ptx.reg, #ptx.reg]>>, #ptx.addr<"shared::cta", #ptx.reg, 0>], operandSegmentSizes = array<i32: 5, 0>}> : (!ptx.reg<b64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()
    "ptx.branchtargets"() <{label = "$L_table", targets = [@"$L_done", @"$L_done"]}> : () -> ()
    "ptx.brx"(%tid) <{mods = ["idx", "uni"], slots = [#ptx.reg, @"$L_table"], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> ()
    "ptx.label"() <{label = "$L_done"}> : () -> ()
    "ptx.ret"() <{mods = [], slots = [], operandSegmentSizes = array<i32: 0, 0>}> : () -> ()
  }) : () -> ()
}) : () -> ()

// CHECK:      "ptx.module"()
// CHECK:        %{{.*}} = "ptx.ld"() <{mods = ["param", "u64"], slots = [#ptx.res, #ptx.addr<"param", @p_out, 0>], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u64>
// CHECK:        %{{.*}} = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, #ptx.sreg<"%tid.x">], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
// CHECK:        "ptx.bra"(%{{.*}}) <{mods = [], slots = [@"$L_done"], operandSegmentSizes = array<i32: 0, 1>}> : (!ptx.reg<pred>) -> ()
// CHECK:        "ptx.add"(%{{.*}}, %{{.*}}, %{{.*}}) <{mods = ["f32"], slots = [#ptx.reg, #ptx.reg, 1.000000e+00 : f32], negated, operandSegmentSizes = array<i32: 2, 1>}>
// CHECK:        "ptx.cp"({{.*}}) <{mods = ["async", "bulk", "tensor", "3d", "global", "shared::cta", "tile", "bulk_group"], slots = [#ptx.tensor_addr<#ptx.reg, #ptx.vec<[#ptx.reg, #ptx.reg, #ptx.reg]>>, #ptx.addr<"shared::cta", #ptx.reg, 0>]
// CHECK:        "ptx.branchtargets"() <{label = "$L_table", targets = [@"$L_done", @"$L_done"]}> : () -> ()
// CHECK-NEXT:   "ptx.brx"(%{{.*}}) <{mods = ["idx", "uni"], slots = [#ptx.reg, @"$L_table"], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> ()

// PTX:      .extern .shared .align 1024 .b8 smem[];
// PTX:      .visible .entry k(
// PTX-NEXT: 	.param .u64 p_out,
// PTX-NEXT: 	.param .u32 p_n
// PTX-NEXT: )
// PTX-NEXT: .maxntid 32, 1, 1
// PTX-NEXT: {
// PTX-NEXT: 	.reg .b64 %rd<5>;
// PTX-NEXT: 	.reg .b32 %r<8>;
// PTX-NEXT: 	.reg .pred %p<2>;
// PTX-NEXT: 	.reg .f32 %f<2>;
// PTX-EMPTY:
// PTX-NEXT: 	ld.param.u64 %rd1, [p_out];
// PTX-NEXT: 	ld.param.u32 %r1, [p_n];
// PTX-NEXT: 	mov.u32 %r2, %tid.x;
// PTX-NEXT: 	mov.u32 %r3, smem;
// PTX-NEXT: 	setp.ge.u32 %p1, %r2, %r1;
// PTX-NEXT: 	@%p1 bra $L_done;
// PTX-NEXT: 	ld.shared.v4.b32 {%r4, %r5, %r6, %r7}, [%r3+16];
// PTX-NEXT: 	mov.f32 %f1, 0f3F000000;
// PTX-NEXT: 	@!%p1 add.f32 %f1, %f1, 0f3F800000;
// PTX-NEXT: 	mul.wide.u32 %rd2, %r2, 4;
// PTX-NEXT: 	add.u64 %rd3, %rd1, %rd2;
// PTX-NEXT: 	st.global.f32 [%rd3+8], %f1;
// PTX-NEXT: 	st.shared.v4.b32 [%r3], {%r4, %r5, %r6, 0};
// PTX-NEXT: 	mov.b64 %rd4, {%r4, %r5};
// PTX-NEXT: 	cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%rd4, {%r2, %r1, %r2}], [%r3];
// PTX-NEXT: $L_table: .branchtargets $L_done, $L_done;
// PTX-NEXT: 	brx.idx.uni %r2, $L_table;
// PTX-NEXT: $L_done:
// PTX-NEXT: 	ret;
// PTX-NEXT: }
