"""The smiles_padding benchmark: ``python benchmarks/smiles_padding/run.py`` (see its docstring)."""
