// attention_decode: one decode step of grouped-query attention for one KV
// head, its context split over SMs. q 4x128 (the 4 query heads that share
// the KV head), k and v 256x128 (the cached rows), all bf16; out 4x128 bf16.
//
// Why. One token's attention reads the whole KV cache, which for a long
// context is the bulk of a decode step's memory traffic. A single SM would
// stream it alone; splitting the context into blocks lets several SMs read
// it at once (split-K attention, "flash decoding").
//
// Phase 1. Block %s (rows 64s .. 64s+63 of k and v) with its bias row
// (0 for a row to attend to, -inf for a masked one: the host fills it, e.g.
// -inf past the current position): attn_block gives each query head the
// block's partial softmax state [o (128 values), m, l, 0, 0], stored to rows
// 4s .. 4s+3 of the f32 buffer %states (16x132).
//
// Phase 2. One load of all of %states. It comes after the stores in program
// order, so the dependency analysis makes it wait for every store to that
// region: across SMs, through a global counter. attn_merge rescales the four
// states to their common maximum and adds them in order (state 0 first),
// so the result does not depend on which SM finished first; %mask (-inf
// skips a state, e.g. a block wholly past the position) lets one program
// serve shorter contexts. scale = 1/sqrt(128).

vdir.program @attention_decode(%q: !vdir.buffer<4x128xbf16>,
                               %k: !vdir.buffer<256x128xbf16>,
                               %v: !vdir.buffer<256x128xbf16>,
                               %bias: !vdir.buffer<1x256xf32>,
                               %mask: !vdir.buffer<1x4xf32>,
                               %states: !vdir.buffer<16x132xf32>,
                               %out: !vdir.buffer<4x128xbf16>) attributes {target = "h200"} {
  vdir.repeat %s = 0 to 4 {
    %row = affine.apply affine_map<(d0) -> ((d0 * 64))> (%s)
    %srow = affine.apply affine_map<(d0) -> ((d0 * 4))> (%s)
    %qt = vdir.load %q[0, 0] : !vdir.buffer<4x128xbf16> -> !vdir.tile<4x128xbf16>
    %kt = vdir.load %k[%row, 0] : !vdir.buffer<256x128xbf16> -> !vdir.tile<64x128xbf16>
    %vt = vdir.load %v[%row, 0] : !vdir.buffer<256x128xbf16> -> !vdir.tile<64x128xbf16>
    %bt = vdir.load %bias[0, %row] : !vdir.buffer<1x256xf32> -> !vdir.tile<1x64xf32>
    %st = vdir.compute attn_block(%qt, %kt, %vt, %bt) {scale = 0.08838834764831845 : f32} : (!vdir.tile<4x128xbf16>, !vdir.tile<64x128xbf16>, !vdir.tile<64x128xbf16>, !vdir.tile<1x64xf32>) -> !vdir.tile<4x132xf32>
    %stored = vdir.store %st, %states[%srow, 0] : !vdir.tile<4x132xf32>, !vdir.buffer<16x132xf32>
  }
  %all = vdir.load %states[0, 0] : !vdir.buffer<16x132xf32> -> !vdir.tile<16x132xf32>
  %mt = vdir.load %mask[0, 0] : !vdir.buffer<1x4xf32> -> !vdir.tile<1x4xf32>
  %ot = vdir.compute attn_merge(%all, %mt) {groups = 4 : i64} : (!vdir.tile<16x132xf32>, !vdir.tile<1x4xf32>) -> !vdir.tile<4x128xbf16>
  %done = vdir.store %ot, %out[0, 0] : !vdir.tile<4x128xbf16>, !vdir.buffer<4x128xbf16>
}
