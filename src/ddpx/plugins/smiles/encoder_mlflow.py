"""``model.encoder_from`` in an MLflow store: a run (``runs:/RUN_ID``, ``runs:/RUN_ID/model``, the bare
run id) or a logged model (``models:/NAME/VERSION``, ``models:/m-…``) of ddpx's.

The store is the run's ``--tracking-uri``, else ``MLFLOW_TRACKING_URI``, else MLflow's default
(``sqlite:///mlflow.db`` in the folder ddpx runs in); a local store that does not exist is an
error, never created. The source's ``model/`` folder (a run's artifact folder, or the logged
model's data) is downloaded to a temporary folder, read, and removed.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from ddpx.api import UserError

RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def tracking_store(tracking_uri: str | None) -> str:
    """The store to read: an existing one, or a :class:`UserError`."""
    import mlflow

    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or mlflow.get_tracking_uri()
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///") :]).is_file():
        raise UserError(
            f"model.encoder_from names an MLflow run or model, and there is no MLflow store at {uri}. Run ddpx "
            "in the folder of the pretraining run's store, or pass it with --tracking-uri (or MLFLOW_TRACKING_URI)."
        )
    return uri


def artifact_uri(source: str) -> str:
    """The URI of the source's model folder: a run's ``model`` artifacts unless a path is given."""
    if RUN_ID.match(source):
        return f"runs:/{source}/model"
    if source.startswith("runs:/") and "/" not in source[len("runs:/") :].strip("/"):
        return source.rstrip("/") + "/model"
    return source


def download_location(source: str, uri: str) -> str:
    """Where the source's files are: a run's URI as it is; a model's (logged, or a registered
    version, which points at a logged model) resolved in the store ``uri`` itself, never in
    MLflow's process-wide registry."""
    location = artifact_uri(source)
    if not location.startswith("models:/"):
        return location
    from mlflow import MlflowClient
    from mlflow.store.artifact.utils.models import get_model_name_and_version

    client = MlflowClient(tracking_uri=uri, registry_uri=uri)
    for _ in range(2):  # a registered version's source is its logged model's models:/m-... URI
        found = get_model_name_and_version(client, location)
        if len(found) == 1:  # models:/m-...: a logged model
            location = client.get_logged_model(found[0]).artifact_location
        else:
            location = client.get_model_version_download_uri(*found)
        if not location.startswith("models:/"):
            break
    return location


def from_mlflow(source: str, tracking_uri: str | None):
    """The :class:`~ddpx.plugins.smiles.encoder_files.EncoderFile` of an MLflow run or model."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from ddpx.plugins.smiles.encoder_files import from_model_folder

    uri = tracking_store(tracking_uri)
    kind = "MLflow model" if source.startswith("models:/") else "MLflow run"
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a few small files: no bar
    with tempfile.TemporaryDirectory(prefix="ddpx-encoder-") as folder:
        try:
            location = download_location(source, uri)
            mlflow.artifacts.download_artifacts(artifact_uri=location, dst_path=folder, tracking_uri=uri)
        except (MlflowException, OSError) as exc:
            message = (getattr(exc, "message", None) or str(exc)).splitlines()[0].rstrip(".")
            raise UserError(
                f"model.encoder_from '{source}' cannot be read from the MLflow store {uri}: {message}. Give a run "
                "of this store (runs:/RUN_ID), a model URI (models:/NAME/VERSION), or a run folder."
            ) from None
        spec = next(
            (p for p in sorted(Path(folder).rglob("model.json")) if (p.parent / "state_dict.pt").is_file()), None
        )
        if spec is None:
            raise UserError(
                f"model.encoder_from '{source}' holds no ddpx model (model.json and state_dict.pt). Give the run of "
                "a *_dmpnn recipe, or its logged model."
            )
        found = from_model_folder(spec.parent, kind)
        found.lineage["ddpx.encoder_from.run_id"] = _run_id(source, Path(folder))
    return found


def _run_id(source: str, folder: Path) -> str:
    """The pretraining run's id: the source's own, or the one its logged model records (``MLmodel``)."""
    if RUN_ID.match(source):
        return source
    if source.startswith("runs:/"):
        return source[len("runs:/") :].split("/", 1)[0]
    for mlmodel in folder.rglob("MLmodel"):
        found = re.search(r"^run_id: *(\S+)", mlmodel.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
        if found:
            return found.group(1)
    return ""
