"""Helpers for tests and benchmarks: checks of results, not part of the compiler or the runtime."""
