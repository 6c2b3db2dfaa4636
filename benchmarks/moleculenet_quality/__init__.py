"""The moleculenet_quality benchmark: ``python benchmarks/moleculenet_quality/run.py`` (see its docstring)."""
