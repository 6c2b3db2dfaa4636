"""What a run leaves behind: the run folder, the tracking run, failures, reports, the exported
model and the dataset record."""
