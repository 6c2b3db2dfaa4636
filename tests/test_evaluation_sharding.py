"""Evaluation shards tile a split exactly: no padding, no dropped tail."""

import pytest

from ddpx.rank.loop.evaluation import shard_bounds


@pytest.mark.parametrize("size", [0, 1, 2, 7, 10, 1001])
@pytest.mark.parametrize("world", [1, 2, 3, 4, 8])
def test_shards_cover_every_index_once(size, world):
    shards = [shard_bounds(size, rank, world) for rank in range(world)]
    flat = [i for shard in shards for i in shard]
    assert flat == list(range(size))
    lengths = [len(s) for s in shards]
    assert max(lengths) - min(lengths) <= 1
