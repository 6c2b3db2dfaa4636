"""The process group: where this rank stands in the world, joining and leaving the group, the
collectives the run uses, and stop requests and signals agreed by every rank."""
