"""The rank side: the SPMD program every rank runs — join the group, build, train, evaluate
exactly, checkpoint, and react to stop requests."""
