"""The sharded_memory benchmark: ``python benchmarks/sharded_memory/run.py`` (see its docstring)."""
