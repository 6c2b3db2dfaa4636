"""Chemprop 2.3.1 building a table's training data in one process, as ``chemprop train`` does:
``make_datapoints`` (a ``MoleculeDatapoint`` per SMILES, its RDKit molecule made), ``make_dataset``
(a ``MoleculeDataset`` with the V2 multi-hot featurizer), the targets standardised, then
``dataset.cache = True`` (every molecule's graph featurized and kept, what ``chemprop train`` does
unless ``--no-cache``). Its ``RssAnon`` just before the build is noted (the interpreter, the
imports, the SMILES and targets read), so what the build itself adds per molecule can be told
from the process's peak. The targets are ddpx's descriptor rows of the same molecules (float64, as
Chemprop reads a CSV's), so both hold the same data.

Run by :func:`measure_chemprop` as its own process (``python benchmarks/scale/chemprop_build.py``),
whose peak ``RssAnon`` is sampled from outside as the ranks' is; a build whose private memory
passes ``limit_mb`` is stopped there, and says so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.common.environment import ROOT
from benchmarks.scale.memory import PeakSampler, rss_anon_mb

CHUNK = 50_000  # datapoints made at a time, so that a build stopped on the way says how far it came


def progress(**values) -> None:
    """One line of how far the build has come, on stderr (the log :func:`measure_chemprop` reads back)."""
    print(json.dumps({**values, "rss_anon_mb": rss_anon_mb(os.getpid())}), file=sys.stderr, flush=True)


def build(data: Path, size: int, targets: Path) -> dict:
    """Chemprop's dataset of the file's first ``size`` molecules; its seconds (the file read left out).
    Its datapoints are made ``CHUNK`` molecules at a time (each independent of the others: the same
    list as one call makes), each chunk reported on stderr, then each phase after them."""
    import numpy as np
    from chemprop.cli.utils.parsing import make_datapoints, make_dataset

    from ddpx.plugins.smiles.smiles_file import read_smiles

    smiles = read_smiles(data, "SMILES", size)
    Y = np.concatenate([np.load(part) for part in sorted(targets.glob("part-*.npy"))]).astype(np.float64)
    before = rss_anon_mb(os.getpid())  # the interpreter, Chemprop's imports, the SMILES and targets read
    started = time.perf_counter()
    points = []
    for start in range(0, len(smiles), CHUNK):
        mol_data, _ = make_datapoints(
            [smiles[start : start + CHUNK]], None, Y[start : start + CHUNK], None, None, None, None, None, None,
            None, None, keep_h=False, add_h=False, ignore_stereo=False, reorder_atoms=False,
            use_cuikmolmaker_featurization=False,
        )  # fmt: skip
        points.extend(mol_data[0])
        progress(phase="datapoints", molecules=len(points))
    dataset = make_dataset(points, "REAC_DIFF", "V2", False)
    dataset.normalize_targets()
    progress(phase="graph cache", molecules=len(points))
    dataset.cache = True
    seconds = time.perf_counter() - started
    progress(phase="built", molecules=len(points))
    return {"molecules": len(dataset), "build_s": seconds, "before_build_mb": before}


def how_far(log: Path) -> dict:
    """The last progress line of a build's log: the phase it was in and the molecules it had made."""
    lines = [line for line in log.read_text().splitlines() if line.startswith('{"phase"')] if log.is_file() else []
    return json.loads(lines[-1]) if lines else {"phase": "reading", "molecules": 0}


def _env() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])),
    }


def measure_chemprop(data: Path, size: int, targets: Path, limit_mb: float, log: Path) -> dict:
    """Chemprop's build of ``size`` molecules in a process of its own: its seconds and peak private
    memory, or where it passed ``limit_mb``, that it was stopped there."""
    command = [sys.executable, str(Path(__file__).resolve()), str(data.resolve()), str(size), str(targets)]
    started = time.perf_counter()
    result = log.with_suffix(".json")
    with log.open("a") as err, result.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT, env=_env())
        with PeakSampler(process.pid, ranks=False) as sampler:
            stopped = False
            while process.poll() is None:
                if (sampler.peak_mb() or 0) > limit_mb:
                    process.kill()
                    stopped = True
                time.sleep(0.2)
    record = {"wall_s": time.perf_counter() - started, "peak_rss_anon_mb": sampler.peak_mb(), "stopped": stopped}
    if stopped:
        reached = how_far(log)
        record.update(limit_mb=limit_mb, stopped_in=reached["phase"], molecules_made=reached["molecules"])
    elif process.returncode != 0:
        raise RuntimeError(f"Chemprop's build of {size} molecules exited with {process.returncode}; see {log}")
    else:
        record.update(json.loads(result.read_text().strip().splitlines()[-1]))
    return record


if __name__ == "__main__":
    print(json.dumps(build(Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))))
