"""The best model as a run artifact: its state dict and everything needed to rebuild it.

Rank 0 writes ``<run dir>/model/`` at the end of a run and the tracker stores it as the
``model/`` artifact folder:

- ``state_dict.pt``: the best epoch's weights, a plain state dict (``torch.load(...,
  weights_only=True)`` reads it);
- ``model.json``: the task, the ``model.*`` recipe keys and the task's ``info`` (the SMILES
  vocabulary, the image size and classes, ...), which the model builder needs, and the SHA-256 of
  each weights file's tensors (``weights_sha256``, :func:`weights_sha256`), by which a run made
  again is compared with the first, weight for weight;
- ``calibration.json`` and ``conformal_scores.npz``: the calibrator and the conformal scores fitted
  on the dev split (:mod:`ddpx.records.calibration`), which :func:`load_table_predictor` applies.

An ensemble (``train.ensemble_size=K``) is one model too: ``member_<i>_state_dict.pt`` for each
member instead of ``state_dict.pt``, and ``model.json`` names them with the loss their outputs are
combined by (``"ensemble"``). It loads as an :class:`~ddpx.records.ensemble.EnsembleModel`, and
its table predictor answers with the members' mean and adds their spread
(:data:`~ddpx.records.ensemble_columns.SPREAD_COLUMN`, ``ensemble_spread_<label>`` for several labels);
a regression ensemble answers a variance too, as a variance head's model does (its members' spread
squared, z-scaled by its calibrator), and its ``calibration.json`` reads it so.

:func:`load_model` rebuilds the module from such a folder (downloaded from MLflow, say)::

    from ddpx.records.model_export import load_model
    model = load_model("model/")          # an eval-mode torch.nn.Module
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from ddpx.contract.errors import PluginError, UserError
from ddpx.records.atomic_save import removed_if_failed, save_atomically
from ddpx.records.calibration import Calibration
from ddpx.records.conformal_columns import check_coverage, with_coverage
from ddpx.records.ensemble import EnsembleModel, as_columns
from ddpx.records.ensemble_columns import spread_names

FORMAT = "ddpx-model"
STATE_FILE = "state_dict.pt"
SPEC_FILE = "model.json"


def write_model_files(
    folder: Path,
    state_dict: Mapping[str, torch.Tensor] | Sequence[Mapping[str, torch.Tensor]],
    config: Mapping[str, Any],
    info: Mapping[str, Any],
    loss: str = "",
) -> list[Path]:
    """Write the model files into ``folder``; returns their paths. A sequence of state dicts is an
    ensemble's members, combined by ``loss`` (the task's)."""
    members = [state_dict] if isinstance(state_dict, Mapping) else list(state_dict)
    ensemble = not isinstance(state_dict, Mapping)
    names = [member_file(i) for i in range(len(members))] if ensemble else [STATE_FILE]
    spec = {"format": FORMAT, "task": config["task"], "model": dict(config["model"]), "task_info": dict(info)}
    spec["weights_sha256"] = {name: weights_sha256(weights) for name, weights in zip(names, members)}
    if ensemble:
        spec["ensemble"] = {"members": names, "loss": loss}
    try:
        text = json.dumps(spec, indent=2)
    except TypeError as exc:
        raise PluginError(
            f"task '{config['task']}' returned a TaskData.info that is not JSON-serialisable "
            f"({exc}); keep it to numbers, strings, lists and dicts."
        ) from None
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in names]
    for path, weights in zip(paths, members):
        save_atomically({k: v.detach().cpu() for k, v in weights.items()}, path, "the best model's weights")
    spec_path = folder / SPEC_FILE
    with removed_if_failed(spec_path):
        spec_path.write_text(text, encoding="utf-8")
    return [*paths, spec_path]


def weights_sha256(weights: Mapping[str, torch.Tensor]) -> str:
    """The SHA-256 of a state dict's tensors: for each, in name order, ``"<name>:<shape>:<dtype>\\n"``
    (the shape as a Python tuple) and then its bytes as stored. Equal for equal weights on any machine."""
    hashed = hashlib.sha256()
    for name in sorted(weights):
        tensor = weights[name].detach().cpu().contiguous()
        hashed.update(f"{name}:{tuple(tensor.shape)}:{tensor.dtype}\n".encode())
        hashed.update(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())  # any dtype: bfloat16 too
    return hashed.hexdigest()


def member_file(index: int) -> str:
    return f"member_{index}_{STATE_FILE}"


def load_model(folder: str | Path, registry: Any = None) -> torch.nn.Module:
    """Rebuild the model saved in ``folder`` with the installed plugins, weights loaded, in eval mode
    (an ensemble's: an :class:`~ddpx.records.ensemble.EnsembleModel`)."""
    from ddpx.plugin_host.registry import load_registry

    folder = Path(folder)
    spec = read_spec(folder)
    registry = registry or load_registry()
    builder = registry.get("models", spec["model"]["name"])
    params = {k: v for k, v in spec["model"].items() if k != "name"}
    members = []
    for name in weight_files(spec):
        model = builder.build(params, spec["task_info"])
        model.load_state_dict(torch.load(folder / name, map_location="cpu", weights_only=True))
        members.append(model)
    if "ensemble" in spec:
        return EnsembleModel(members, spec["ensemble"]["loss"]).eval()
    return members[0].eval()


def weight_files(spec: Mapping[str, Any]) -> list[str]:
    return list(spec["ensemble"]["members"]) if "ensemble" in spec else [STATE_FILE]


def read_spec(folder: Path) -> dict[str, Any]:
    """``model.json`` of a model folder whose weight files are all there."""
    spec_path = folder / SPEC_FILE
    spec = json.loads(spec_path.read_text(encoding="utf-8")) if spec_path.is_file() else None
    missing = [SPEC_FILE] if spec is None else [name for name in weight_files(spec) if not (folder / name).is_file()]
    if missing:
        raise UserError(
            f"'{folder}' is not a ddpx model folder: it lacks {', '.join(missing)} "
            "(the `model` artifact folder of a ddpx run has model.json and the weights it names)."
        )
    return spec


class CalibratedModel(torch.nn.Module):
    """The model with its calibrator (``train.calibration``) applied to its outputs: what the run
    measured on held-out and what ``ddpx predict`` answers (:meth:`Calibration.answer`)."""

    def __init__(self, model: torch.nn.Module, calibration: Calibration):
        super().__init__()
        self.model = model
        self.calibration = calibration

    def forward(self, inputs: Any) -> torch.Tensor:
        outputs = self.model(inputs)
        answered = self.calibration.answer(outputs.detach().double().cpu().numpy())
        return torch.from_numpy(answered).to(outputs.device)


def load_table_predictor(folder: str | Path, registry: Any = None) -> Callable[..., Any]:
    """``predict(table, coverage=None) -> table`` with the model saved in ``folder`` (its calibrator
    applied), through its task's predictor (an ensemble's with its spread beside the answers); with
    ``coverage``, each answer's conformal interval or set (:mod:`ddpx.records.conformal_columns`).
    ``predict.example`` is the task's example input table."""
    from ddpx.plugin_host.registry import load_registry

    registry = registry or load_registry()
    model = load_model(folder, registry)
    ensemble = model if isinstance(model, EnsembleModel) else None
    calibration = Calibration.load(Path(folder))
    if calibration is not None and calibration.method != "none":
        model = CalibratedModel(model, calibration).eval()
    spec = json.loads((Path(folder) / SPEC_FILE).read_text(encoding="utf-8"))
    task = registry.get("tasks", spec["task"])
    if task.predictor is None:
        raise UserError(
            f"the task '{task.name}' of this model cannot predict from a table (its plugin declares no "
            "TablePredictor); load the model with ddpx.api.load_model and call it on tensors."
        )
    info = spec["task_info"]

    def predict(table: Any, coverage: float | None = None) -> Any:
        if coverage is not None:
            check_coverage(coverage)
        with torch.no_grad():
            if ensemble is None:
                answers = task.predictor.predict(model, info, table)
            else:
                with ensemble.recording_spread() as spreads:
                    answers = task.predictor.predict(model, info, table)
                answers = with_spread(answers, spreads, info.get("labels") or [], task.name)
        return answers if coverage is None else with_coverage(answers, calibration, coverage)

    predict.example = task.predictor.example(info)
    return predict


def with_spread(answers: Any, spreads: list[torch.Tensor], labels: Sequence[str], task: str) -> Any:
    """``answers`` with the ensemble's spread for each answered row (one without a ``problem``; the
    model was called on those rows, in order), empty for the others, before any ``problem`` column."""
    import numpy as np

    problems = answers["problem"] if "problem" in answers.columns else [""] * len(answers)
    answered = [i for i, problem in enumerate(problems) if not (isinstance(problem, str) and problem)]
    spread = as_columns(torch.cat(spreads)) if spreads else torch.zeros(0, 1)
    if spread.shape[0] != len(answered):
        raise PluginError(
            f"the predictor of task '{task}' called the model on {spread.shape[0]} row(s) for {len(answered)} "
            "answered row(s); an ensemble's spread needs the model called once on each answered row, in order."
        )
    out = answers.copy()
    columns = np.full((len(out), spread.shape[1]), np.nan)
    columns[answered] = spread.numpy()
    for j, name in enumerate(spread_names(spread.shape[1], labels)):
        out[name] = columns[:, j]
    if "problem" in out.columns:
        out["problem"] = out.pop("problem")
    return out
