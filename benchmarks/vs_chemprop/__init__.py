"""The vs_chemprop benchmark: ``python benchmarks/vs_chemprop/run.py`` (see its docstring)."""
