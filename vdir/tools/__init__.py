"""Command-line drivers: ``vdir-opt`` and ``vdir-run``."""
