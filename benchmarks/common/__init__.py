"""What several benchmarks share: the repository's places and the environment a probe plugin needs
(:mod:`.environment`), the commit a table names (:mod:`.provenance`), and the plain PyTorch DDP loop
that ddpx is measured against (``plain_ddp_mlp.py``)."""
