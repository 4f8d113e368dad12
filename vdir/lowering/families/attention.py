"""Bodies of the decode-attention families: ``attn_block``, ``attn_self`` and ``attn_merge``.

``attn_block``: a block's rows are two halves of 64, each a partial state
of its own, combined at the end (``m = max``, each half weighted by
``2^((m_i - m) log2 e)``). With ``2 G`` compute warps or more, a warp per
half: the second half's warp leaves its partial state in the head's result
row, and after the group barrier the first half's warp combines it with its
own; with fewer, one warp per query head runs both halves in turn (rows
``g = warp, warp + warps, ...``). The arithmetic is the same either way, so
the states are the same bits for every group size. In a half, lane ``t``
scores the cached rows ``first + t`` and ``first + t + 32`` (two
registers): dot products of 16-byte chunks of q and k
(``ld.shared.v4.b32``, bf16 widened by shift / mask, ``fma.rn.f32`` into
two accumulators per row), the rows side by side in one loop over the
chunks, the lanes starting at different chunks so that the 32 rows fall in
different banks; then ``scale *``, ``+ bias``. The half's maximum and sum
are butterfly reductions (``max.f32``, ``add.rn.f32``), the same order in
every run; ``p = 2^((s - m) * log2 e)`` (``ex2.approx.ftz``). Each lane
then owns ``D / 32`` adjacent output columns and adds ``p[b] * v[b, :]``
for the half's rows in order, ``p[b]`` broadcast from its lane with
``shfl.sync.idx``. A fully masked half has ``m = -inf``: the exponent's
shift is 0 instead, so every ``p`` is ``2^-inf = 0`` and ``l``, ``o`` are
0; combined with the other half it weighs 0, and the other exactly 1.

``attn_self``: one compute warp per query head; lane ``t`` owns the ``D /
32`` adjacent columns from ``t * D / 32``: its part of ``q . k`` (``fma``),
a butterfly sum, ``m = scale * dot``; it copies its columns of ``v`` (bf16
widened) as ``o``, and lane 0 writes ``m``, ``l = 1`` and the padding.

``attn_merge``: thread per output element ``(g, d)``, round-robin; each
thread walks the states in order s = 0..S-1 twice, first for the maximum
``M`` of the used states' ``m``, then adding ``w * l`` and ``w * o`` (each
product rounded, then added, as the numpy semantics), and divides once.
With the self state (``p3`` bit :data:`~vdir.families.attention.MERGE_HAS_SELF`)
each walk takes it last. Every element's result is one fixed sequence of
roundings.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from vdir.families.attention import HEAD_DIMS, MAX_BLOCK_ROWS, MERGE_HAS_SELF, STATE_EXTRA, STATE_L, STATE_M
from vdir.lowering import families as F

_NEG_INF = float("-inf")
#: bytes of one bf16 / f32 element, of a 16-byte chunk and the bf16 elements in it
_BF16, _F32, _CHUNK = 2, 4, 16
_CHUNK_ELEMS = _CHUNK // _BF16
#: a block's rows are scored in two halves of this many rows, each a partial state of its own, then combined
_HALF_ROWS = MAX_BLOCK_ROWS // 2
#: score registers per lane in a half: rows first + lane + 32 j, j < _SCORE_REGS
_SCORE_REGS = _HALF_ROWS // 32
#: the output loop adds this many cached rows per iteration (the row multiple attn_block requires)
_ROWS_PER_STEP = 8


def attn_block(cc: "F.ComputeCtx") -> None:
    """Partial softmax states of the ``p0`` query heads over ``p2`` cached rows (head dim ``p1``, scale ``f0``).

    One copy per supported head dimension, chosen by ``p1`` (uniform over
    the group); the dimension fixes how many columns a lane owns. Each
    head's rows are two halves (:data:`_HALF_ROWS`), each a partial state,
    then combined. With a warp per half (``2 * p0`` warps at most) the two
    halves of a head run side by side: the second half's warp leaves its
    partial state in the head's result row, and after the group barrier the
    first half's warp combines it with its own. With fewer warps one warp
    runs both halves of a head in turn and combines them in registers: the
    same arithmetic, so the same bits whatever the group size.
    """
    b = cc.b

    def copy(d: int, done: str) -> None:
        pairs = b.new_label(f"attn_block_pairs{d}")
        b.bra(pairs, b.setp("le.u32", b.i("shl.b32", "u32", cc.p0, 1), cc.nwarps))
        _each_head(cc, "attn_block", d, _block_row)
        b.bra(done)
        b.place(pairs)
        _block_rows_in_pairs(cc, d)

    _per_head_dim(cc, "attn_block", copy)


def _block_row(cc: "F.ComputeCtx", g: SSAValue, d: int) -> None:
    """Head ``g``'s state by one warp: both halves, combined in registers."""
    first = _half_state(cc, g, d, 0)
    second = _half_state(cc, g, d, _HALF_ROWS)
    _write_state(cc, g, d, *_combine(cc, first, second))


def _block_rows_in_pairs(cc: "F.ComputeCtx", d: int) -> None:
    """Warp ``w < p0`` runs the first half of head ``w``, warp ``p0 + w`` its second; the second's partial
    state goes through the head's result row (then a group barrier), and the first combines the two."""
    b = cc.b
    heads = cc.p0
    second = b.setp("ge.u32", cc.cw, heads)
    g = b.i("selp.u32", "u32", b.i("sub.u32", "u32", cc.cw, heads), cc.cw, second)
    first_row = b.i("selp.u32", "u32", _HALF_ROWS, 0, second)
    idle, handed = b.new_label("attn_block_idle"), b.new_label("attn_block_handed")
    b.bra(idle, b.setp("ge.u32", cc.cw, b.i("shl.b32", "u32", heads, 1)))
    own = _half_state(cc, g, d, first_row)
    b.bra(handed, b.setp("lt.u32", cc.cw, heads))
    _write_state(cc, g, d, *own)
    b.place(handed)
    b.place(idle)
    b.raw("barrier.sync", "%d, %d" % (F.L.COMPUTE_BARRIER, cc.nthreads))
    combined = b.new_label("attn_block_combined")
    b.bra(combined, b.setp("ge.u32", cc.cw, heads))
    _write_state(cc, g, d, *_combine(cc, own, _read_state(cc, g, d)))
    b.place(combined)


def _half_state(cc: "F.ComputeCtx", g: SSAValue, d: int, first_row: SSAValue | int
                ) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """Head ``g``'s partial state ``(m, l, this lane's o columns)`` over rows ``first_row ..`` (one half)."""
    b = cc.b
    q_row = b.i("mad.lo.u32", "u32", g, d * _BF16, cc.ins[0])
    scores = _scores(cc, q_row, d, first_row)
    top = scores[0]
    for sc in scores[1:]:
        top = b.i("max.f32", "f32", top, sc)
    top = _warp_max(cc, top)
    # a half with every key masked: exponents relative to 0, so each p is 2^-inf = 0
    shift = b.i("selp.f32", "f32", 0.0, top, b.setp("eq.f32", top, _NEG_INF))
    probs = [b.i("ex2.approx.ftz.f32", "f32", b.i("mul.rn.f32", "f32", b.i("sub.rn.f32", "f32", sc, shift), F.LOG2E))
             for sc in scores]
    total = probs[0]
    for pr in probs[1:]:
        total = b.i("add.rn.f32", "f32", total, pr)
    total = F.warp_sum(b, total)
    return top, total, _weighted_values(cc, probs, d, first_row)


def _combine(cc: "F.ComputeCtx", a: tuple[SSAValue, SSAValue, list[SSAValue]],
             c: tuple[SSAValue, SSAValue, list[SSAValue]]) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """Two partial states of one head as one: ``m = max``, each weighted by ``2^((m_i - m) log2 e)``.

    An empty half (``m = -inf``) has weight 0 and the other weight exactly 1,
    so a block of at most :data:`_HALF_ROWS` rows keeps its first half's bits.
    """
    b = cc.b
    top = b.i("max.f32", "f32", a[0], c[0])
    shift = b.i("selp.f32", "f32", 0.0, top, b.setp("eq.f32", top, _NEG_INF))
    wa, wc = (b.i("ex2.approx.ftz.f32", "f32", b.i("mul.rn.f32", "f32", b.i("sub.rn.f32", "f32", m, shift), F.LOG2E))
              for m in (a[0], c[0]))

    def mix(x: SSAValue, y: SSAValue) -> SSAValue:
        return b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", wa, x), b.i("mul.rn.f32", "f32", wc, y))

    return top, mix(a[1], c[1]), [mix(x, y) for x, y in zip(a[2], c[2], strict=True)]


def _state_row(cc: "F.ComputeCtx", g: SSAValue, d: int) -> tuple[SSAValue, SSAValue]:
    """Head ``g``'s result row and this lane's first column in it."""
    b = cc.b
    out_row = b.i("mad.lo.u32", "u32", g, (d + STATE_EXTRA) * _F32, cc.out)
    return out_row, b.i("mad.lo.u32", "u32", cc.lane, (d // 32) * _F32, out_row)


def _write_state(cc: "F.ComputeCtx", g: SSAValue, d: int, top: SSAValue, total: SSAValue | float,
                 outs: list[SSAValue]) -> None:
    """Head ``g``'s row ``[o, m, l, 0, 0]``: each lane its columns of ``o``, lane 0 the rest."""
    b = cc.b
    out_row, col = _state_row(cc, g, d)
    for i, o in enumerate(outs):
        b.st("st.shared.f32", col, i * _F32, o)
    lane0 = b.setp("eq.u32", cc.lane, 0)
    tail = d * _F32
    b.st("st.shared.f32", out_row, tail + STATE_M * _F32, top, guard=lane0)
    b.st("st.shared.f32", out_row, tail + STATE_L * _F32, total, guard=lane0)
    for pad in range(2, STATE_EXTRA):
        b.st("st.shared.f32", out_row, tail + pad * _F32, 0.0, guard=lane0)


def _read_state(cc: "F.ComputeCtx", g: SSAValue, d: int) -> tuple[SSAValue, SSAValue, list[SSAValue]]:
    """Head ``g``'s row as :func:`_write_state` left it: ``(m, l, this lane's o columns)`` on every lane."""
    b = cc.b
    out_row, col = _state_row(cc, g, d)
    outs = [b.ld("ld.shared.f32", "f32", col, i * _F32) for i in range(d // 32)]
    tail = d * _F32
    return (b.ld("ld.shared.f32", "f32", out_row, tail + STATE_M * _F32),
            b.ld("ld.shared.f32", "f32", out_row, tail + STATE_L * _F32), outs)


def attn_self(cc: "F.ComputeCtx") -> None:
    """The states of the ``p0`` query heads over the one row ``k``, ``v`` (head dim ``p1``, scale ``f0``)."""
    _per_head_dim(cc, "attn_self", lambda d, done: _each_head(cc, "attn_self", d, _self_row))


def _per_head_dim(cc: "F.ComputeCtx", name: str, copy) -> None:
    """``copy(d, done)`` emits the body for head dimension ``d``; the one for ``p1`` runs, then ``done``."""
    b = cc.b
    done = b.new_label(f"{name}_done")
    labels = {d: b.new_label(f"{name}_d{d}") for d in HEAD_DIMS}
    for d, label in labels.items():
        b.bra(label, b.setp("eq.u32", cc.p1, d))
    b.bra(done)
    for d, label in labels.items():
        b.place(label)
        copy(d, done)
        b.bra(done)
    b.place(done)


def _each_head(cc: "F.ComputeCtx", name: str, d: int, row_body) -> None:
    """``row_body(cc, g, d)`` for query heads ``g = warp, warp + warps, ...``: a warp per head."""
    cc.b.for_range(cc.cw, cc.p0, cc.nwarps, lambda g: row_body(cc, g, d), f"{name}_row{d}")


def _self_row(cc: "F.ComputeCtx", g: SSAValue, d: int) -> None:
    """Query head ``g``'s state over the one row: ``m = scale * (q_g . k)``, ``l = 1``, ``o = v``."""
    b = cc.b
    cols = d // 32
    q_row = b.i("mad.lo.u32", "u32", g, d * _BF16, cc.ins[0])
    lane_cols = b.i("mul.lo.u32", "u32", cc.lane, cols * _BF16)
    q_at, k_at, v_at = (b.i("add.u32", "u32", base, lane_cols) for base in (q_row, cc.ins[1], cc.ins[2]))
    acc = b.var("f32", 0.0)
    for i in range(cols):
        b.i("fma.rn.f32", "f32", F.load_bf16(b, q_at, i * _BF16), F.load_bf16(b, k_at, i * _BF16), acc, dst=acc)
    top = b.i("mul.rn.f32", "f32", cc.f0, F.warp_sum(b, acc))
    _write_state(cc, g, d, top, 1.0, [F.load_bf16(b, v_at, i * _BF16) for i in range(cols)])


def _scores(cc: "F.ComputeCtx", q_row: SSAValue, d: int, first_row: SSAValue | int) -> list[SSAValue]:
    """``scale * (q . k[r]) + bias[r]`` for this lane's rows ``r = first_row + lane + 32 j``, ``j <``
    :data:`_SCORE_REGS`; ``-inf`` past the block.

    One loop over q's 16-byte chunks computes the four dot products side by
    side (each in its own two accumulators, so each sum is rounded in the
    same order as one dot product alone): the four chains of ``fma`` and
    their ``k`` loads overlap instead of running one after another, and q's
    chunk is read and widened once for the four rows. A row past the block
    (``r >= p2``) reads row 0 (every block has at least
    :data:`~vdir.families.attention.BLOCK_ROW_MULTIPLE` rows) and its score is ``-inf``.
    """
    b = cc.b
    chunks = d // _CHUNK_ELEMS  # a power of two: the rotation is a mask
    valid, k_rows, bias_offs = [], [], []
    lane_row = b.i("add.u32", "u32", cc.lane, first_row)
    for j in range(_SCORE_REGS):
        r = b.i("add.u32", "u32", lane_row, 32 * j)
        ok = b.setp("lt.u32", r, cc.p2)
        r = b.i("selp.u32", "u32", r, 0, ok)
        valid.append(ok)
        k_rows.append(b.i("mad.lo.u32", "u32", r, d * _BF16, cc.ins[1]))
        bias_offs.append(b.i("mad.lo.u32", "u32", r, _F32, cc.ins[3]))
    accs = [[b.var("f32", 0.0) for _ in range(2)] for _ in range(_SCORE_REGS)]

    def chunk(c: SSAValue) -> None:
        # lane t starts at chunk t: the 32 rows' chunks fall in different banks
        rotated = b.i("and.b32", "u32", b.i("add.u32", "u32", c, cc.lane), chunks - 1)
        off = b.i("shl.b32", "u32", rotated, 4)
        qs = b.ld_v4("ld.shared.v4.b32", "b32", b.i("add.u32", "u32", q_row, off))
        ks = [b.ld_v4("ld.shared.v4.b32", "b32", b.i("add.u32", "u32", k_row, off)) for k_row in k_rows]
        q_pairs = [F.bf16_pair(b, qw) for qw in qs]
        for j in range(_SCORE_REGS):
            for w in range(4):
                for half, (kv, qv) in enumerate(zip(F.bf16_pair(b, ks[j][w]), q_pairs[w], strict=True)):
                    b.i("fma.rn.f32", "f32", kv, qv, accs[j][half], dst=accs[j][half])

    b.for_range(0, chunks, 1, chunk, "attn_dot")
    scores = []
    for j in range(_SCORE_REGS):
        dot = b.i("add.rn.f32", "f32", accs[j][0], accs[j][1])
        bias = b.ld("ld.shared.f32", "f32", bias_offs[j])
        score = b.i("add.rn.f32", "f32", b.i("mul.rn.f32", "f32", cc.f0, dot), bias)
        scores.append(b.i("selp.f32", "f32", score, _NEG_INF, valid[j]))
    return scores


def _warp_max(cc: "F.ComputeCtx", v: SSAValue) -> SSAValue:
    """Butterfly maximum over the warp; every lane gets it (exact, so order-free)."""
    b = cc.b
    for k in (16, 8, 4, 2, 1):
        v = b.i("max.f32", "f32", v, b.i("shfl.sync.bfly.b32", "f32", v, k, 31, F.FULL))
    return v


def _weighted_values(cc: "F.ComputeCtx", probs: list[SSAValue], d: int, first_row: SSAValue | int
                     ) -> list[SSAValue]:
    """This lane's ``d / 32`` columns of ``sum_b p[b] * v[b, :]`` over the half's rows ``b = first_row ..``,
    added in order.

    ``p[b]`` lives in register ``(b - first_row) / 32`` of lane ``b % 32``;
    eight rows per iteration (they share the register).
    """
    b = cc.b
    cols = d // 32
    words = cols // 2
    outs = [b.var("f32", 0.0) for _ in range(cols)]
    v_col = b.i("mad.lo.u32", "u32", cc.lane, cols * _BF16, cc.ins[2])

    def step(r0: SSAValue) -> None:
        reg = b.i("shr.u32", "u32", b.i("sub.u32", "u32", r0, first_row), 5)
        p = probs[0]
        for j in range(1, _SCORE_REGS):
            p = b.i("selp.f32", "f32", probs[j], p, b.setp("eq.u32", reg, j))
        v_row = b.i("mad.lo.u32", "u32", r0, d * _BF16, v_col)
        src = b.i("and.b32", "u32", r0, 31)
        for t in range(_ROWS_PER_STEP):
            pb = b.i("shfl.sync.idx.b32", "f32", p, b.i("add.u32", "u32", src, t), 31, F.FULL)
            for w in range(words):
                vw = b.ld("ld.shared.b32", "b32", v_row, t * d * _BF16 + w * 4)
                for half, vv in enumerate(F.bf16_pair(b, vw)):
                    o = outs[2 * w + half]
                    b.i("fma.rn.f32", "f32", pb, vv, o, dst=o)

    last = b.i("min.u32", "u32", cc.p2, b.i("add.u32", "u32", first_row, _HALF_ROWS))
    b.for_range(first_row, last, _ROWS_PER_STEP, step, f"attn_pv{d}")
    return outs


def attn_merge(cc: "F.ComputeCtx") -> None:
    """out[g, d] = (sum_s w_s o_s[g, d]) / (sum_s w_s l_s[g]) over the used states, in order s = 0..S-1.

    ``p0`` state rows (``S * G``), ``p1`` columns (``D + 4``), ``p2`` = G;
    state ``s`` is used unless ``mask[s]`` is ``-inf``; zeros where no used
    state has a finite ``m``.
    """
    b = cc.b
    rows, cols, groups = cc.p0, cc.p1, cc.p2
    d = b.i("sub.u32", "u32", cols, STATE_EXTRA)
    count = b.i("div.u32", "u32", rows, groups)
    state_bytes = b.i("mul.lo.u32", "u32", b.i("mul.lo.u32", "u32", groups, cols), _F32)
    row_bytes = b.i("mul.lo.u32", "u32", cols, _F32)
    m_off = b.i("mul.lo.u32", "u32", d, _F32)

    def element(i: SSAValue) -> None:
        g = b.i("div.u32", "u32", i, d)
        col = b.i("sub.u32", "u32", i, b.i("mul.lo.u32", "u32", g, d))
        row0 = b.i("mad.lo.u32", "u32", g, row_bytes, cc.ins[0])  # row g of state 0
        top = b.var("f32", _NEG_INF)

        def maximum(_s: SSAValue | None, row: SSAValue) -> None:
            m = b.ld("ld.shared.f32", "f32", b.i("add.u32", "u32", row, m_off), STATE_M * _F32)
            b.i("max.f32", "f32", top, m, dst=top)

        _each_used_state(cc, count, state_bytes, row0, maximum, "attn_merge_max")
        self_row = b.i("mad.lo.u32", "u32", g, row_bytes, cc.ins[2])
        _if_self(cc, lambda: maximum(None, self_row), "attn_merge_self_max")
        empty = b.setp("eq.f32", top, _NEG_INF)
        shift = b.i("selp.f32", "f32", 0.0, top, empty)
        total, acc = b.var("f32", 0.0), b.var("f32", 0.0)

        def accumulate(_s: SSAValue | None, row: SSAValue) -> None:
            tail = b.i("add.u32", "u32", row, m_off)
            m = b.ld("ld.shared.f32", "f32", tail, STATE_M * _F32)
            w = b.i("ex2.approx.ftz.f32", "f32",
                    b.i("mul.rn.f32", "f32", b.i("sub.rn.f32", "f32", m, shift), F.LOG2E))
            l_s = b.ld("ld.shared.f32", "f32", tail, STATE_L * _F32)
            b.i("add.rn.f32", "f32", total, b.i("mul.rn.f32", "f32", w, l_s), dst=total)
            o = b.ld("ld.shared.f32", "f32", b.i("mad.lo.u32", "u32", col, _F32, row))
            b.i("add.rn.f32", "f32", acc, b.i("mul.rn.f32", "f32", w, o), dst=acc)

        _each_used_state(cc, count, state_bytes, row0, accumulate, "attn_merge_sum")
        _if_self(cc, lambda: accumulate(None, self_row), "attn_merge_self_sum")
        y = b.i("div.rn.f32", "f32", acc, total)
        y = b.i("selp.f32", "f32", 0.0, y, empty)
        F.store_elem(b, cc.out, b.i("mul.lo.u32", "u32", i, _BF16), y, "bf16")

    b.for_range(cc.ct, b.i("mul.lo.u32", "u32", groups, d), cc.nthreads, element, "attn_merge")


def _each_used_state(cc: "F.ComputeCtx", count: SSAValue, state_bytes: SSAValue, row0: SSAValue,
                     body, hint: str) -> None:
    """``body(s, row)`` for s = 0..count-1 whose mask entry is not ``-inf``; ``row``: this head's row of state s."""
    b = cc.b
    row = b.var("u32", row0)

    def state(s: SSAValue) -> None:
        skip = b.new_label(f"{hint}_skip")
        mask = b.ld("ld.shared.f32", "f32", b.i("mad.lo.u32", "u32", s, _F32, cc.ins[1]))
        b.bra(skip, b.setp("eq.f32", mask, _NEG_INF))
        body(s, row)
        b.place(skip)
        b.i("add.u32", "u32", row, state_bytes, dst=row)

    b.for_range(0, count, 1, state, hint)


def _if_self(cc: "F.ComputeCtx", body, hint: str) -> None:
    """``body()`` when the merge has a self state (``p3`` bit :data:`MERGE_HAS_SELF`)."""
    b = cc.b
    skip = b.new_label(f"{hint}_skip")
    flag = b.i("and.b32", "u32", cc.p3, MERGE_HAS_SELF)
    b.bra(skip, b.setp("eq.u32", flag, 0))
    body()
    b.place(skip)
