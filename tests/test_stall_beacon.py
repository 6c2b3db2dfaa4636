"""A rank's stall watcher: a long phase whose plugin reports its progress (a large data set
featurized part by part) is not reported as a stall; the same phase gone quiet is."""

import time

from ddpx.rank.diagnostics.stall import Beacon, StallWatcher, progress_log
from ddpx.records.stalls import read_stalls, stall_file


def test_a_phase_that_reports_progress_is_no_stall_and_the_same_phase_gone_quiet_is(tmp_path):
    beacon, said, reports = Beacon(), [], []
    beacon.at("building the data of task moses")
    log = progress_log(said.append, beacon)
    watcher = StallWatcher(tmp_path, stall_file(tmp_path, 0), 0, 0.4, reports.append, beacon)
    watcher.start()
    try:
        for part in range(12):  # 1.2 s in one phase, three times the quiet period, a part every 0.1 s
            log(f"part {part + 1} of 12")
            time.sleep(0.1)
        assert read_stalls(tmp_path) == [] and reports == []
        assert said == [f"part {part + 1} of 12" for part in range(12)]  # every line still said
        time.sleep(1.0)  # no part for 1 s
        [stalled] = read_stalls(tmp_path)
        assert stalled["where"] == "building the data of task moses" and stalled["quiet_s"] >= 0.4
        assert "no progress on rank(s) 0:" in reports[0]
    finally:
        watcher.stop(forget=True)
