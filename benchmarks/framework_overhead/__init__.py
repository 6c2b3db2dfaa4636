"""The framework_overhead benchmark: ``python benchmarks/framework_overhead/run.py`` (see its docstring)."""
