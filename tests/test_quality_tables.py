"""``benchmarks/moleculenet_quality.py --best-of``: the model a user would pick per set is the one
with the better mean *dev* metric, in the metric's direction, never the better held-out value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "moleculenet_quality.py"


def seed_rows(set_name: str, recipe: str, metric: str, greater: bool, pairs, overrides=()) -> list[dict]:
    return [{"set": set_name, "recipe": recipe, "family": recipe.rsplit("_", 1)[1], "overrides": list(overrides),
             "seed": seed, "metric": metric, "greater_is_better": greater, "value": heldout, "dev": dev,
             "wall_s": 1.0} for seed, (heldout, dev) in enumerate(pairs)]


def best_of(tmp_path: Path, rows: list[dict]) -> list[str]:
    record = tmp_path / "results.jsonl"
    record.write_text("".join(json.dumps(row) + "\n" for row in rows))
    result = subprocess.run([sys.executable, str(SCRIPT), "--best-of", str(record)], capture_output=True, text=True,
                            check=True)
    lines = result.stdout.splitlines()
    return [line for line in lines if line.startswith("| ") and not line.startswith(("| set", "| ---"))]


def test_the_better_dev_mean_chooses_in_the_metrics_direction(tmp_path):
    rows = [
        # BACE: the BiLSTM has the better held-out value, the graph model the better dev value
        *seed_rows("bace", "bace_rnn", "roc_auc", True, [(0.84, 0.70), (0.82, 0.71)]),
        *seed_rows("bace", "bace_dmpnn", "roc_auc", True, [(0.80, 0.73), (0.79, 0.74)]),
        # ESOL: RMSE, lower is better; with descriptors the graph model has the lower dev RMSE
        *seed_rows("esol", "esol_dmpnn", "rmse", False, [(0.95, 1.10), (0.97, 1.00)]),
        *seed_rows("esol", "esol_dmpnn", "rmse", False, [(1.20, 0.90), (1.10, 0.92)],
                   overrides=["dataset.molecule_features=v1_rdkit_2d_normalized"]),
    ]
    bace, esol = best_of(tmp_path, rows)
    cells = [c.strip() for c in bace.split("|")[1:-1]]
    assert cells[2] == "bace_dmpnn" and cells[3].startswith("0.7950") and cells[4] == "0 1"
    assert cells[-1] == "no"  # 0.795 is below the published D-MPNN's 0.809
    cells = [c.strip() for c in esol.split("|")[1:-1]]
    assert cells[2] == "esol_dmpnn dataset.molecule_features=v1_rdkit_2d_normalized" and cells[3].startswith("1.1500")
    assert cells[-1] == "no"  # an RMSE of 1.15 is above (worse than) the published 1.050
    assert "esol_dmpnn: 0.9600 (1.0500)" in cells[5]
