"""Rotary position embedding tables for the ``rope`` family.

The ``rope`` family (``vdir.families.builtin``) rotates each head of a tile
by one position's ``cos`` / ``sin`` rows; a program loads those rows from a
``max_positions x head_dim`` table at the launch-time position (a runtime
row offset), so one compiled program serves every position. This module
computes the tables on the host: the base frequency ``theta`` and,
optionally, Llama-3's frequency scaling.

Rotate-half layout: ``head_dim / 2`` frequencies ``theta ** (-2i / head_dim)``;
the angle of position ``p`` and frequency ``i`` is ``p * inv_freq[i]``,
written into both halves of the row, so that
``x * cos + rotate_half(x) * sin`` rotates the pair ``(x[i], x[i + D/2])``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Llama3Scaling:
    """Llama-3's RoPE frequency scaling (``rope_scaling`` with ``rope_type = "llama3"``).

    Frequencies whose wavelength is shorter than
    ``original_max_position / high_freq_factor`` are kept, those longer than
    ``original_max_position / low_freq_factor`` are divided by ``factor``,
    and the band between is interpolated linearly in
    ``original_max_position / wavelength``.
    """

    factor: float = 8.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position: int = 8192

    def __post_init__(self) -> None:
        if not (self.factor > 0 and 0 < self.low_freq_factor < self.high_freq_factor and self.original_max_position > 0):
            raise ValueError(
                "Llama-3 scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
                f"original_max_position > 0, got {self}"
            )

    def apply(self, inv_freq: np.ndarray) -> np.ndarray:
        """The scaled inverse frequencies (float64)."""
        wavelength = 2 * math.pi / inv_freq
        ratio = self.original_max_position / wavelength  # periods within the original context
        smooth = (ratio - self.low_freq_factor) / (self.high_freq_factor - self.low_freq_factor)
        interpolated = (1 - smooth) * inv_freq / self.factor + smooth * inv_freq
        long_waves = ratio < self.low_freq_factor
        short_waves = ratio > self.high_freq_factor
        return np.where(short_waves, inv_freq, np.where(long_waves, inv_freq / self.factor, interpolated))


def inverse_frequencies(head_dim: int, theta: float = 10000.0, scaling: Llama3Scaling | None = None) -> np.ndarray:
    """The ``head_dim / 2`` inverse frequencies (float64), scaled when ``scaling`` is given."""
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be positive and even, got {head_dim}")
    if not theta > 1:
        raise ValueError(f"theta must be greater than 1, got {theta}")
    inv_freq = theta ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    return scaling.apply(inv_freq) if scaling is not None else inv_freq


def rope_tables(
    max_positions: int, head_dim: int, theta: float = 10000.0, scaling: Llama3Scaling | None = None,
    dtype: type = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """``(cos, sin)``, each ``max_positions x head_dim`` of ``dtype``: row ``p`` is position ``p``.

    Angles are computed in float64 and rounded once to ``dtype`` (f32, or
    ``ml_dtypes.bfloat16`` for bf16 tables).
    """
    if max_positions <= 0:
        raise ValueError(f"max_positions must be positive, got {max_positions}")
    inv_freq = inverse_frequencies(head_dim, theta, scaling)
    angles = np.outer(np.arange(max_positions, dtype=np.float64), inv_freq)
    angles = np.concatenate([angles, angles], axis=1)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
