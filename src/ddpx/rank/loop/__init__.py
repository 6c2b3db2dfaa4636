"""The training loop of one rank: ``fit`` (build, restore, the epochs, the held-out evaluation),
the epoch loop and its steps, the training state, batching, evaluation, the optimizer and the
schedule, and fitting a checkpoint to another number of ranks."""
