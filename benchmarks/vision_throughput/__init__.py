"""The vision_throughput benchmark: ``python benchmarks/vision_throughput/run.py`` (see its docstring)."""
