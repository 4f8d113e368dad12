"""Comparing a backend's outputs with the reference evaluator.

:func:`compare_outputs` is the oracle of ``vdir-run --check``, the
certification tests and the GPU checks: each backend has a stated tolerance
(:data:`TOLERANCES`) against :func:`vdir.testing.reference.evaluate`, and
a miss is reported as the worst element (:class:`Mismatch`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: How close each backend must come to :func:`vdir.testing.reference.evaluate`.
TOLERANCES = {
    "sim": "within 1 bf16 ulp of the reference (ulp floor at 2^-8 of the output's max |value|)",
    "cuda": "atol = rtol = 2e-2 relative to the output's max |value|",
}


@dataclass
class Mismatch:
    """The worst element of an output that misses the tolerance."""

    name: str
    index: tuple[int, ...]
    actual: float
    expected: float
    allowed: float
    tolerance: str

    def __str__(self) -> str:
        where = ", ".join(map(str, self.index))
        return (
            f"output '{self.name}' differs from the reference at [{where}]: got {self.actual:.6g}, "
            f"expected {self.expected:.6g} (|diff| {abs(self.actual - self.expected):.3g} > allowed "
            f"{self.allowed:.3g}; tolerance: {self.tolerance})"
        )


#: how an integer (i32) output must match, on every backend: data that is only
#: loaded and stored is copied bit for bit
EXACT = "exact (an integer output)"


def allowed_error(expected: np.ndarray, backend: str) -> np.ndarray:
    """Per-element allowed |actual - expected| for ``backend`` (see :data:`TOLERANCES`; integers: 0).

    The output's scale is that of its finite values: a NaN or an infinity in
    the reference must match exactly (see :func:`compare_outputs`) and does
    not widen the tolerance of the others.
    """
    if expected.dtype.kind in "iu":
        return np.zeros(expected.shape)
    ref = np.abs(expected.astype(np.float64))
    finite = ref[np.isfinite(ref)]
    scale = float(finite.max()) if finite.size else 0.0
    ref = np.where(np.isfinite(ref), ref, scale)
    if backend == "sim":
        floor = max(scale * 2.0**-8, np.finfo(np.float32).tiny)
        magnitude = np.maximum(ref, floor)
        return np.exp2(np.floor(np.log2(magnitude)) - 7)  # bf16 has 8 significant bits
    scale = scale or 1.0
    return 2e-2 * scale + 2e-2 * ref


def compare_outputs(
    actual: dict[str, np.ndarray], expected: dict[str, np.ndarray], backend: str
) -> Mismatch | None:
    """The worst out-of-tolerance element over all outputs, or None when all match.

    An element matches when it equals the reference (an infinity the same
    infinity), is NaN where the reference is NaN, or is within the tolerance;
    any other NaN or infinity on either side is a mismatch. Non-finite values
    are data here: no numpy warning is raised for them.
    """
    tolerance = TOLERANCES.get(backend, TOLERANCES["cuda"])
    worst: tuple[float, Mismatch] | None = None
    for name, want in expected.items():
        got = actual[name].astype(np.float64)
        want64 = want.astype(np.float64)
        allowed = allowed_error(want, "sim" if backend == "sim" else "cuda")
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, handled below
            diff = np.abs(got - want64)
        same = (got == want64) | (np.isnan(got) & np.isnan(want64))
        excess = np.where(same, 0.0, np.where(np.isnan(diff), np.inf, diff - allowed))
        if excess.size == 0 or excess.max() <= 0:
            continue
        flat = int(np.argmax(excess))
        index = np.unravel_index(flat, want.shape)
        mismatch = Mismatch(
            name, tuple(int(i) for i in index), float(got[index]), float(want64[index]),
            float(allowed[index]), EXACT if want.dtype.kind in "iu" else tolerance,
        )
        if worst is None or excess[index] > worst[0]:
            worst = (float(excess[index]), mismatch)
    return None if worst is None else worst[1]
