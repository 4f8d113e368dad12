// RUN: vdir-opt %s --print-diagnostics --split-input-file | filecheck %s

// The decode-attention families' signatures: attn_block takes q GxD, k and v
// BxD (bf16) and a 1xB f32 bias, with D 64 or 128, G at most 16 and B a
// multiple of 8 up to 128, and gives GxD+4 f32 states; attn_merge takes S*G
// state rows of D+4 f32 columns, a 1xS f32 mask and groups = G (1 to 16),
// and optionally flat = 0 or 1 (GxD or 1xG*D output), and optionally a
// third operand, the self state (GxD+4 f32); attn_self takes q GxD and the
// one row k and v 1xD (bf16) and gives the GxD+4 f32 state of that row.

vdir.program @head_dim(%q: !vdir.buffer<4x96xbf16>, %k: !vdir.buffer<8x96xbf16>, %v: !vdir.buffer<8x96xbf16>, %b: !vdir.buffer<1x8xf32>, %o: !vdir.buffer<4x100xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x96xbf16> -> !vdir.tile<4x96xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<8x96xbf16> -> !vdir.tile<8x96xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<8x96xbf16> -> !vdir.tile<8x96xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': head dimension 96 (q 4x96xbf16) must be one of 64, 128
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x96xbf16>, !vdir.tile<8x96xbf16>, !vdir.tile<8x96xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<4x100xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x100xf32>, !vdir.buffer<4x100xf32>
}

// -----

vdir.program @too_many_heads(%q: !vdir.buffer<24x64xbf16>, %k: !vdir.buffer<8x64xbf16>, %v: !vdir.buffer<8x64xbf16>, %b: !vdir.buffer<1x8xf32>, %o: !vdir.buffer<24x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<24x64xbf16> -> !vdir.tile<24x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': 24 query heads (q 24x64xbf16) share one KV head; at most 16
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<24x64xbf16>, !vdir.tile<8x64xbf16>, !vdir.tile<8x64xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<24x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<24x68xf32>, !vdir.buffer<24x68xf32>
}

// -----

vdir.program @rows_not_multiple(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<12x64xbf16>, %v: !vdir.buffer<12x64xbf16>, %b: !vdir.buffer<1x12xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<12x64xbf16> -> !vdir.tile<12x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<12x64xbf16> -> !vdir.tile<12x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x12xf32> -> !vdir.tile<1x12xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': 12 cached rows (k 12x64xbf16) must be a multiple of 8 up to 128
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<12x64xbf16>, !vdir.tile<12x64xbf16>, !vdir.tile<1x12xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @rows_too_many(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<136x64xbf16>, %v: !vdir.buffer<136x64xbf16>, %b: !vdir.buffer<1x136xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<136x64xbf16> -> !vdir.tile<136x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<136x64xbf16> -> !vdir.tile<136x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x136xf32> -> !vdir.tile<1x136xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': 136 cached rows (k 136x64xbf16) must be a multiple of 8 up to 128
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<136x64xbf16>, !vdir.tile<136x64xbf16>, !vdir.tile<1x136xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @k_columns(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<8x128xbf16>, %v: !vdir.buffer<8x128xbf16>, %b: !vdir.buffer<1x8xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<8x128xbf16> -> !vdir.tile<8x128xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<8x128xbf16> -> !vdir.tile<8x128xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': k must have 64 columns like q, got 8x128xbf16
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<8x128xbf16>, !vdir.tile<8x128xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @v_shape(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<8x64xbf16>, %b: !vdir.buffer<1x16xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<8x64xbf16> -> !vdir.tile<8x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x16xf32> -> !vdir.tile<1x16xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': v must be 16x64 like k, got 8x64xbf16
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<8x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @bias_shape(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<1x8xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x8xf32> -> !vdir.tile<1x8xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': bias must be 1x16, got 1x8xf32
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<1x8xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @bias_dtype(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<1x16xbf16>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x16xbf16> -> !vdir.tile<1x16xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': bias must be f32, got 1x16xbf16
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<1x16xbf16>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @q_dtype(%q: !vdir.buffer<4x64xf32>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<1x16xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xf32> -> !vdir.tile<4x64xf32>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x16xf32> -> !vdir.tile<1x16xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block': q must be bf16, got 4x64xf32
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xf32>, !vdir.tile<16x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @no_scale(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<1x16xf32>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x16xf32> -> !vdir.tile<1x16xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block' needs parameter 'scale'
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt)  : (!vdir.tile<4x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @result(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<16x64xbf16>, %v: !vdir.buffer<16x64xbf16>, %b: !vdir.buffer<1x16xf32>, %o: !vdir.buffer<4x64xbf16>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<16x64xbf16> -> !vdir.tile<16x64xbf16>
  %bt = vdir.load %b[0, 0] : !vdir.buffer<1x16xf32> -> !vdir.tile<1x16xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_block' produces a 4x68xf32 tile here, but the result is declared 4x64xbf16
  %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<16x64xbf16>, !vdir.tile<1x16xf32>) -> !vdir.tile<4x64xbf16>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @merge_groups(%s: !vdir.buffer<18x68xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<4x64xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<18x68xf32> -> !vdir.tile<18x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': 18 state rows are not whole states of groups = 4 rows
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 4 : i64} : (!vdir.tile<18x68xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<4x64xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @merge_mask(%s: !vdir.buffer<12x68xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<4x64xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<12x68xf32> -> !vdir.tile<12x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': mask must be 1x3 (one entry per state), got 1x4xf32
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 4 : i64} : (!vdir.tile<12x68xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<4x64xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @merge_states_dtype(%s: !vdir.buffer<12x72xbf16>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<3x68xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<12x72xbf16> -> !vdir.tile<12x72xbf16>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': states must be f32, got 12x72xbf16
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 3 : i64} : (!vdir.tile<12x72xbf16>, !vdir.tile<1x4xf32>) -> !vdir.tile<3x68xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<3x68xbf16>, !vdir.buffer<3x68xbf16>
}

// -----

vdir.program @merge_no_head(%s: !vdir.buffer<4x4xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<1x8xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<4x4xf32> -> !vdir.tile<4x4xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': states 4x4xf32 need D + 4 columns with D >= 1
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 1 : i64} : (!vdir.tile<4x4xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<1x8xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<1x8xbf16>, !vdir.buffer<1x8xbf16>
}

// -----

vdir.program @merge_groups_range(%s: !vdir.buffer<34x68xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<34x64xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<34x68xf32> -> !vdir.tile<34x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': parameter 'groups' = 34 is outside its range 1 to 16
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 34 : i64} : (!vdir.tile<34x68xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<34x64xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<34x64xbf16>, !vdir.buffer<34x64xbf16>
}

// -----

// flat = 1 gives the merged heads as one row; the result must be declared so.
vdir.program @merge_flat_result(%s: !vdir.buffer<16x68xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<4x64xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<16x68xf32> -> !vdir.tile<16x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge' produces a 1x256xbf16 tile here, but the result is declared 4x64xbf16
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 4 : i64, flat = 1 : i64} : (!vdir.tile<16x68xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<4x64xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}

// -----

vdir.program @merge_flat_value(%s: !vdir.buffer<16x68xf32>, %m: !vdir.buffer<1x4xf32>, %o: !vdir.buffer<1x256xbf16>) {
  %stt = vdir.load %s[0, 0] : !vdir.buffer<16x68xf32> -> !vdir.tile<16x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': parameter 'flat' = 2 is outside its range 0 to 1
  %ot = vdir.compute attn_merge(%stt, %mt) {groups = 4 : i64, flat = 2 : i64} : (!vdir.tile<16x68xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<1x256xbf16>
  %d = vdir.store %ot, %o[0, 0] : !vdir.tile<1x256xbf16>, !vdir.buffer<1x256xbf16>
}

// -----

vdir.program @self_two_rows(%q: !vdir.buffer<4x64xbf16>, %k: !vdir.buffer<2x64xbf16>, %v: !vdir.buffer<1x64xbf16>, %o: !vdir.buffer<4x68xf32>) {
  %qt = vdir.load %q[0, 0] : !vdir.buffer<4x64xbf16> -> !vdir.tile<4x64xbf16>
  %kt = vdir.load %k[0, 0] : !vdir.buffer<2x64xbf16> -> !vdir.tile<2x64xbf16>
  %vt = vdir.load %v[0, 0] : !vdir.buffer<1x64xbf16> -> !vdir.tile<1x64xbf16>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_self': k must be the one row 1x64, got 2x64xbf16
  %st = vdir.compute attn_self(%qt, %kt, %vt) {scale = 1.250000e-01 : f32} : (!vdir.tile<4x64xbf16>, !vdir.tile<2x64xbf16>, !vdir.tile<1x64xbf16>) -> !vdir.tile<4x68xf32>
  %s = vdir.store %st, %o[0, 0] : !vdir.tile<4x68xf32>, !vdir.buffer<4x68xf32>
}

// -----

vdir.program @merge_self_heads(%st: !vdir.buffer<16x68xf32>, %m: !vdir.buffer<1x4xf32>, %own: !vdir.buffer<8x68xf32>, %o: !vdir.buffer<4x64xbf16>) {
  %stt = vdir.load %st[0, 0] : !vdir.buffer<16x68xf32> -> !vdir.tile<16x68xf32>
  %mt = vdir.load %m[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  %ownt = vdir.load %own[0, 0] : !vdir.buffer<8x68xf32> -> !vdir.tile<8x68xf32>
  // CHECK: {{.*}}:[[# @LINE + 1]]:3: error: family 'attn_merge': self must be one state of 4x68 like the stacked ones, got 8x68xf32
  %ot = vdir.compute attn_merge(%stt, %mt, %ownt) {groups = 4 : i64} : (!vdir.tile<16x68xf32>, !vdir.tile<1x4xf32>, !vdir.tile<8x68xf32>) -> !vdir.tile<4x64xbf16>
  %s = vdir.store %ot, %o[0, 0] : !vdir.tile<4x64xbf16>, !vdir.buffer<4x64xbf16>
}
