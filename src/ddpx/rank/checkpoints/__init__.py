"""Checkpoints and resuming on a rank: what goes into ``last.pt`` and ``best.pt`` and how every
rank writes its part, a sharded model's shards, and which checkpoint a run continues from. The
file itself (its format, safe reading, the checks) is :mod:`ddpx.records.checkpoint_file`."""
