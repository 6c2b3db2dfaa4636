"""The side_by_side benchmark: ``python benchmarks/side_by_side/run.py`` (see its docstring)."""
