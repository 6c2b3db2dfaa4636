"""What a user sees in a real terminal (a pseudo-terminal, so rich draws the live progress bar)."""

import pytest

from conftest import TEST_RECIPES, run_in_terminal

pytestmark = pytest.mark.slow  # starts ranks


def test_the_live_progress_bar_prints_no_warning(tmp_path):
    output = run_in_terminal(["recipe", str(TEST_RECIPES / "tiny_mlp.toml"), "--tracking", "none",
                              "train.max_epochs=2"], tmp_path)
    assert "epoch 2/2" in output and "done" in output
    assert "requires_grad" not in output and "Warning" not in output and "warn" not in output.lower()
