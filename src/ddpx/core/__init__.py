"""The ddpx core: the hook contract, plugin loading, recipes, the SPMD worker and its helpers."""
