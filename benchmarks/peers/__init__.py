"""The peers benchmark: ``python benchmarks/peers/run.py`` (see its docstring)."""
