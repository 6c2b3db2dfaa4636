"""The parent side of a run: plan a job (every check before a process starts), create its run
folder, hand it to a launcher, read the outcome back; sweeps of many jobs."""
