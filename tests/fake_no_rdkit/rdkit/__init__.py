# Stands in for an environment without RDKit: importing it fails as a missing package does.
raise ImportError("No module named 'rdkit' (test stand-in)")
