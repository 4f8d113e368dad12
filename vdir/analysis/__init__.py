"""Analyses shared by the passes: the micro-op graph, the cost model, queue order.

Passes (``vdir.transforms``) import from here and never from each other; the
lowering and the tools read the same analyses.
"""
