"""The SMILES tasks' checks before launch, in the launching process: the file is there (or will be
downloaded), reads as a CSV with the needed columns and both labels, is large enough for its split,
and RDKit is installed where it is needed. Nothing here imports torch: a user's mistake comes back
without the 3 s of torch's import, and a good job starts its ranks that much sooner.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ddpx.api import UserError
from ddpx.plugins.smiles.chem import require_rdkit
from ddpx.plugins.smiles.chemprop_check import require_chemprop
from ddpx.plugins.smiles.csv_table import SmilesTable, read_smiles_csv
from ddpx.plugins.smiles.params import MOLECULE_FEATURIZERS, NO_FEATURES
from ddpx.plugins.smiles.splits import check_random_split


def check_molecule_features(name: str, inputs: str) -> None:
    """``dataset.molecule_features`` names known featurizers and suits the model's input form."""
    if name == NO_FEATURES:
        if inputs == "molecule_features":
            raise UserError(
                "this recipe's model reads molecule-level features only, and dataset.molecule_features="
                "none gives it none. Name them: dataset.molecule_features=morgan_count (2 048 Morgan "
                "counts), v1_rdkit_2d_normalized (200 RDKit descriptors), or both: "
                "morgan_count+v1_rdkit_2d_normalized."
            )
        return
    parts = name.split("+")
    for part in parts:
        if part not in MOLECULE_FEATURIZERS:
            close = difflib.get_close_matches(part, MOLECULE_FEATURIZERS, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UserError(
                f"dataset.molecule_features={name}: {part!r} is not one of Chemprop's molecule featurizers"
                f"{hint}. Use {', '.join(MOLECULE_FEATURIZERS)}, several joined by '+', or none."
            )
    twice = sorted({part for part in parts if parts.count(part) > 1})
    if twice:
        raise UserError(
            f"dataset.molecule_features={name} names {', '.join(twice)} twice, which would repeat the same "
            "columns. Name each featurizer once."
        )
    if inputs not in ("molecule_graph", "molecule_features"):
        raise UserError(
            f"dataset.molecule_features={name} adds molecule-level features beside a molecular graph, and "
            f"this recipe's model reads {inputs or 'another input'}, not graphs. Use a graph model "
            "(model.name=dmpnn) or the features' own model (model.name=features_ffn), or leave "
            "dataset.molecule_features=none."
        )
    require_chemprop(f"dataset.molecule_features={name}")


def check_enumeration(params: Mapping[str, Any], inputs: str) -> None:
    """SMILES enumeration goes to a model that reads SMILES strings."""
    if (params["enumerate"] or params["eval_enumerate"]) and inputs not in ("", "smiles_tokens"):
        raise UserError(
            f"dataset.enumerate and dataset.eval_enumerate write each molecule as other SMILES strings, and "
            f"this recipe's model reads {inputs}, which is the same however the SMILES is written. Leave "
            "both at 0, or use a SMILES model (a *_rnn recipe)."
        )


def label_columns(params: Mapping[str, Any]) -> list[str]:
    """``dataset.label_columns`` if given, else the one ``dataset.label_column``."""
    return list(params["label_columns"]) or [params["label_column"]]


def dataset_path(params: Mapping[str, Any], default_path: Callable[[], Path | None]) -> Path:
    path = Path(params["path"]).expanduser() if params["path"] else default_path()
    if path is None:
        raise UserError("this task needs dataset.path=FILE, a CSV with a SMILES column and a 0/1 label column.")
    return path


def check_smiles_params(
    params: Mapping[str, Any],
    default_path: Callable[[], Path | None],
    missing_hint: str,
    regression: bool = False,
    inputs: str = "",
) -> SmilesTable | None:
    """Before launch: the file exists (or will be downloaded), reads as a CSV with the needed
    columns and both labels (or targets), RDKit is there when needed, molecule features go to a
    model that reads graphs or features, and SMILES enumeration to one that reads SMILES
    (``inputs``: the model's input form); the table read, if any."""
    check_molecule_features(params["molecule_features"], inputs)
    check_enumeration(params, inputs)
    path = dataset_path(params, default_path)
    if params["download"] and not params["url"]:
        raise UserError("dataset.download=true needs dataset.url=URL to download from.")
    if not params["download"] and not path.is_file():
        raise UserError(f"dataset file '{path}' does not exist. {missing_hint.format(path=path, url=params['url'])}")
    if params["split"] == "scaffold":
        require_rdkit("dataset.split=scaffold")
    if params["canonicalize"]:
        require_rdkit("dataset.canonicalize=true")
    if params["enumerate"] or params["eval_enumerate"]:
        require_rdkit("dataset.enumerate / dataset.eval_enumerate")
    if not path.is_file():
        return None
    # an empty, binary or mislabelled file, or one too small for its split, is a usage error now, not in every rank
    table = read_smiles_csv(
        path, params["smiles_column"], label_columns(params), strict=params["strict"], regression=regression
    )
    if params["split"] == "random":  # the scaffold split needs RDKit's scaffolds: checked on the ranks
        check_random_split(
            table.labels,
            params["heldout_fraction"],
            params["dev_fraction"],
            source=f"'{path}'",
            stratify=len(table.label_names) == 1 and not regression,
            names=table.classes or table.label_words.get(table.label_names[0]),
        )
    return table
