"""The launch_cost benchmark: ``python benchmarks/launch_cost/run.py`` (see its docstring)."""
