"""What a rank tells about itself: its console and progress lines, the stall watcher, the phase
clock, the step profiler, and the check that the ranks' parameters stay equal."""
