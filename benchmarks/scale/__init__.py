"""The scale benchmark: ``python benchmarks/scale/run.py`` (see its docstring)."""
