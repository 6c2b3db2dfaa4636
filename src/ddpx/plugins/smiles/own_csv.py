"""``smiles_csv``: a user's own CSV of molecules, classification or regression.

Any CSV with a SMILES column and one or several label columns::

    ddpx recipe smiles_csv_rnn dataset.path=my_molecules.csv dataset.label_columns='["pIC50"]' \
        dataset.task_type=regression

``dataset.task_type`` declares what the columns hold: ``classification`` (0/1 labels or two
words; binary cross-entropy, ROC-AUC) or ``regression`` (numbers; mean squared error on
standardised targets, RMSE). A declaration the file contradicts — numbers such as 3.7 under
``classification``, only 0s and 1s under ``regression`` — is refused before anything starts.
One label column of three classes or more (words such as HIV's CI/CM/CA, or the integers 0 to
K-1) trains a softmax classifier: cross-entropy, the macro one-vs-rest ROC-AUC (which chooses the
epoch), and the held-out accuracy beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddpx.api import Param, TaskSpec, UserError
from ddpx.plugins.smiles.csv_table import measurements_not_classes
from ddpx.plugins.smiles.moleculenet import INPUTS, SPLIT_IMPORTS

TASK_TYPES = ("classification", "regression")


def _judged_by(params: Mapping[str, Any]) -> tuple:
    from ddpx.plugins.smiles.csv_format import holds_several_classes
    from ddpx.plugins.smiles.file_checks import label_columns

    if params["task_type"] == "regression":
        return ("mse", "rmse")
    columns = label_columns(params)
    if (
        len(columns) == 1
        and params["path"]
        and holds_several_classes(params["path"], params["smiles_column"], columns[0])
    ):
        return ("cross_entropy", "roc_auc", ("accuracy",))
    return ("bce_with_logits", "roc_auc")


def _no_default_path():
    return None


def _build(request):
    from ddpx.plugins.smiles.data import build_smiles_data

    return build_smiles_data(request, _no_default_path, "", regression=request.params["task_type"] == "regression")


def _check(params: Mapping[str, Any], world_size: int = 1, inputs: str = "") -> None:
    from ddpx.plugins.smiles.file_checks import check_smiles_params, label_columns

    if label_columns(params) == [""]:
        raise UserError(
            "task smiles_csv needs the column(s) to learn: dataset.label_column=COLUMN, or "
            'dataset.label_columns=\'["A", "B"]\' for several.'
        )
    regression = params["task_type"] == "regression"
    table = check_smiles_params(params, _no_default_path, "", regression=regression, inputs=inputs)
    if table is None:
        return
    if not regression and table.numbers_not_binary:
        raise UserError(measurements_not_classes(params["path"], table.numbers_not_binary))
    if regression:
        _check_not_binary(table, params["path"])


def _check_not_binary(table, path: str) -> None:
    rows = [row if isinstance(row, tuple) else (row,) for row in table.labels]
    for j, name in enumerate(table.label_names):
        if {row[j] for row in rows if row[j] == row[j]} <= {0.0, 1.0}:
            raise UserError(
                f"dataset.task_type=regression, but column '{name}' of '{path}' holds only 0 and 1: "
                "classes, not measurements. Set dataset.task_type=classification."
            )


def own_csv_task(params_for, predictor) -> TaskSpec:
    params: dict[str, Param] = dict(params_for(smiles_column="smiles", url="", label_column="", label_columns=[]))
    params["path"] = Param("", "your CSV file (required): a SMILES column and one or several label columns")
    params["label_column"] = Param(
        "",
        "column holding the labels: 0/1 or two words; three classes or more as words or as 0 to K-1 (a softmax "
        "classifier); numbers with dataset.task_type=regression",
    )
    params["task_type"] = Param(
        "classification",
        "what the label columns hold: 0/1 classes (classification) or numbers (regression)",
        choices=TASK_TYPES,
    )
    return TaskSpec(
        "smiles_csv",
        "your own CSV of SMILES: classification or regression (dataset.task_type)",
        _build,
        loss="bce_with_logits",
        metric="roc_auc",
        params=params,
        check=_check,
        predictor=predictor,
        inputs=INPUTS,
        judged_by=_judged_by,
        imports=SPLIT_IMPORTS,
    )
