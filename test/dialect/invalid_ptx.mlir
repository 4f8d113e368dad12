// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s --match-full-lines

// The ptx dialect's verifier: each instruction's modifiers must be known for
// its root, and each operand slot must hold the kind of operand (register of
// a fitting kind, predicate, immediate, address) its signature asks for.
// Every error names the instruction and is located at the op.

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%x = "ptx.ld"(%r) <{mods = ["sharde", "u32"], slots = [#ptx.res, #ptx.addr<"shared", #ptx.reg, 0>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%x = "ptx.ld"(%r) <{mods = ["shared", "u32"], slots = [#ptx.res, #ptx.reg], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%f = "ptx.add"(%r, %r) <{mods = ["f32"], slots = [#ptx.res, #ptx.reg, #ptx.reg], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<f32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%s = "ptx.selp"(%r, %r, %r) <{mods = ["u32"], slots = [#ptx.res, #ptx.reg, #ptx.reg, #ptx.reg], operandSegmentSizes = array<i32: 3, 0>}> : (!ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
"ptx.bra"(%r) <{mods = [], slots = [@"$L_top"], operandSegmentSizes = array<i32: 0, 1>}> : (!ptx.reg<u32>) -> ()

// -----

"ptx.bra"() <{mods = ["uni"], slots = [@"$L_top"], negated, operandSegmentSizes = array<i32: 0, 0>}> : () -> ()

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%s = "ptx.add"(%r) <{mods = ["u32"], slots = [#ptx.res, #ptx.reg], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%s = "ptx.add"(%r, %r) <{mods = ["u32"], slots = [#ptx.res, #ptx.reg, 1 : i64], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u32>, !ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%a, %b = "ptx.ld"(%r) <{mods = ["shared", "v4", "b32"], slots = [#ptx.vec<[#ptx.res, #ptx.res]>, #ptx.addr<"shared", #ptx.reg, 0>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> (!ptx.reg<b32>, !ptx.reg<b32>)

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%x = "ptx.ld"(%r) <{mods = ["shared", "u32"], slots = [#ptx.res, #ptx.addr<"global", #ptx.reg, 0>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%x = "ptx.ld"(%r) <{mods = ["global", "u32"], slots = [#ptx.res, #ptx.addr<"global", #ptx.reg, 0>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%f = "ptx.mov"() <{mods = ["f32"], slots = [#ptx.res, 1 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<f32>

// -----

%t = "ptx.mov"() <{mods = ["u64"], slots = [#ptx.res, #ptx.sreg<"%tid.x">], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u64>

// -----

%t = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, #ptx.sreg<"%tid.w">], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%x = "ptx.ld"(%r) <{mods = ["shared", "u32"], slots = [#ptx.res, #ptx.addr<"shraed", #ptx.reg, 0>], operandSegmentSizes = array<i32: 1, 0>}> : (!ptx.reg<u32>) -> !ptx.reg<u32>

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
%a = "ptx.mov"() <{mods = ["u64"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u64>
"ptx.cp"(%r, %a, %r, %r, %r) <{mods = ["async", "bulk", "shared::cluster", "global", "mbarrier::complete_tx::bytes", "L2::cache_hint"], slots = [#ptx.addr<"shared::cluster", #ptx.reg, 0>, #ptx.addr<"global", #ptx.reg, 0>, #ptx.reg, #ptx.addr<"shared::cluster", #ptx.reg, 0>, #ptx.reg], operandSegmentSizes = array<i32: 5, 0>}> : (!ptx.reg<u32>, !ptx.reg<u64>, !ptx.reg<u32>, !ptx.reg<u32>, !ptx.reg<u32>) -> ()

// -----

"ptx.branchtargets"() <{label = "$L_table", targets = []}> : () -> ()

// -----

%r = "ptx.mov"() <{mods = ["u32"], slots = [#ptx.res, 0 : i64], operandSegmentSizes = array<i32: 0, 0>}> : () -> !ptx.reg<u32>
"ptx.brx"(%r, %r) <{mods = ["idx"], slots = [#ptx.reg, #ptx.reg], operandSegmentSizes = array<i32: 2, 0>}> : (!ptx.reg<u32>, !ptx.reg<u32>) -> ()

// CHECK:      {{.*}}invalid_ptx.mlir:9:1: error: ld.sharde.u32: unknown modifier '.sharde' for ld (known: acq_rel, acquire, {{.*}}, wt)
// CHECK:      {{.*}}invalid_ptx.mlir:14:1: error: ld.shared.u32: operand 2 must be an address [reg+imm], got a register
// CHECK:      {{.*}}invalid_ptx.mlir:19:1: error: add.f32: operand 2: a !ptx.reg<u32> where a .f32 register is expected
// CHECK:      {{.*}}invalid_ptx.mlir:24:1: error: selp.u32: operand 4: a !ptx.reg<u32> where a .pred predicate is expected
// CHECK:      {{.*}}invalid_ptx.mlir:29:1: error: bra: the guard must be a !ptx.reg<pred>, got !ptx.reg<u32>
// CHECK:      {{.*}}invalid_ptx.mlir:33:1: error: bra.uni: 'negated' needs a guard predicate
// CHECK:      {{.*}}invalid_ptx.mlir:38:1: error: add.u32: expects 3 operands, got 2
// CHECK:      {{.*}}invalid_ptx.mlir:43:1: error: add.u32: the operand slots use 1 result(s) and 1 SSA operand(s), the op has 1 and 2
// CHECK:      {{.*}}invalid_ptx.mlir:48:1: error: ld.shared.v4.b32: operand 1: a .v4 vector needs 4 elements, got 2
// CHECK:      {{.*}}invalid_ptx.mlir:53:1: error: ld.shared.u32: operand 2: an address in 'global', not in the instruction's (shared)
// CHECK:      {{.*}}invalid_ptx.mlir:58:1: error: ld.global.u32: operand 2 (address base): a !ptx.reg<u32> where a .b64 register is expected
// CHECK:      {{.*}}invalid_ptx.mlir:62:1: error: mov.f32: operand 2: an integer immediate where a .f32 operand is expected
// CHECK:      {{.*}}invalid_ptx.mlir:66:1: error: mov.u64: operand 2: %tid.x does not fit the type .u64
// CHECK:      {{.*}}invalid_ptx.mlir:70:65: error: unknown PTX special register '%tid.w'
// CHECK:      {{.*}}invalid_ptx.mlir:75:76: error: unknown PTX state space 'shraed' (known: generic, global, shared, shared::cta, shared::cluster, param, const, local)
// CHECK:      {{.*}}invalid_ptx.mlir:81:1: error: cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint: operand 5: a !ptx.reg<u32> where a .b64 register is expected
// CHECK:      {{.*}}invalid_ptx.mlir:85:1: error: $L_table: a .branchtargets list needs at least one label
// CHECK:      {{.*}}invalid_ptx.mlir:90:1: error: brx.idx: operand 2 must be a label, got a register
