"""The gpu_check benchmark: ``python benchmarks/gpu_check/run.py`` (see its docstring)."""
