"""The best model as a run artifact: its state dict and everything needed to rebuild it.

Rank 0 writes ``<run dir>/model/`` at the end of a run and the tracker stores it as the
``model/`` artifact folder:

- ``state_dict.pt``: the best epoch's weights, a plain state dict (``torch.load(...,
  weights_only=True)`` reads it);
- ``model.json``: the task, the ``model.*`` recipe keys and the task's ``info`` (the SMILES
  vocabulary, the image size and classes, ...), which the model builder needs;
- ``calibration.json``: the calibrator and the conformal scores fitted on the dev split
  (:mod:`ddpx.records.calibration`), which :func:`load_table_predictor` applies.

:func:`load_model` rebuilds the module from such a folder (downloaded from MLflow, say)::

    from ddpx.records.model_export import load_model
    model = load_model("model/")          # an eval-mode torch.nn.Module
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from ddpx.contract.errors import PluginError, UserError
from ddpx.records.atomic_save import removed_if_failed, save_atomically
from ddpx.records.calibration import Calibration
from ddpx.records.conformal_columns import check_coverage, with_coverage

FORMAT = "ddpx-model"
STATE_FILE = "state_dict.pt"
SPEC_FILE = "model.json"


def write_model_files(
    folder: Path, state_dict: Mapping[str, torch.Tensor], config: Mapping[str, Any], info: Mapping[str, Any]
) -> list[Path]:
    """Write the two model files into ``folder``; returns their paths."""
    try:
        spec = json.dumps(
            {"format": FORMAT, "task": config["task"], "model": dict(config["model"]), "task_info": dict(info)},
            indent=2,
        )
    except TypeError as exc:
        raise PluginError(
            f"task '{config['task']}' returned a TaskData.info that is not JSON-serialisable "
            f"({exc}); keep it to numbers, strings, lists and dicts."
        ) from None
    folder.mkdir(parents=True, exist_ok=True)
    state_path, spec_path = folder / STATE_FILE, folder / SPEC_FILE
    save_atomically({k: v.detach().cpu() for k, v in state_dict.items()}, state_path, "the best model's weights")
    with removed_if_failed(spec_path):
        spec_path.write_text(spec, encoding="utf-8")
    return [state_path, spec_path]


def load_model(folder: str | Path, registry: Any = None) -> torch.nn.Module:
    """Rebuild the model saved in ``folder`` with the installed plugins, weights loaded, in eval mode."""
    from ddpx.plugin_host.registry import load_registry

    folder = Path(folder)
    spec_path, state_path = folder / SPEC_FILE, folder / STATE_FILE
    if not spec_path.is_file() or not state_path.is_file():
        raise UserError(
            f"'{folder}' is not a ddpx model folder: it needs {SPEC_FILE} and {STATE_FILE} "
            "(the `model` artifact folder of a ddpx run)."
        )
    spec = json.loads(spec_path.read_text(encoding="utf-8"))
    registry = registry or load_registry()
    builder = registry.get("models", spec["model"]["name"])
    params = {k: v for k, v in spec["model"].items() if k != "name"}
    model = builder.build(params, spec["task_info"])
    model.load_state_dict(torch.load(state_path, map_location="cpu", weights_only=True))
    return model.eval()


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
    applied), through its task's predictor; with ``coverage``, each answer's conformal interval or
    set (:mod:`ddpx.records.conformal_columns`). ``predict.example`` is the task's example input."""
    from ddpx.plugin_host.registry import load_registry

    registry = registry or load_registry()
    model = load_model(folder, registry)
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
            answers = task.predictor.predict(model, info, table)
        return answers if coverage is None else with_coverage(answers, calibration, coverage)

    predict.example = task.predictor.example(info)
    return predict
