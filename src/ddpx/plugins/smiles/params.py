"""The ``dataset.*`` keys every SMILES task shares, and the ``smiles_rnn`` model's ``model.*`` keys."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ddpx.api import Param, UserError

NO_FEATURES = "none"
# Chemprop's molecule featurizers (chemprop.featurizers.MoleculeFeaturizerRegistry) that describe a molecule
MOLECULE_FEATURIZERS = ("v1_rdkit_2d_normalized", "v1_rdkit_2d", "rdkit_2d", "morgan_binary", "morgan_count")


def smiles_params(
    *, smiles_column: str, label_column: str, url: str, label_columns: list[str] | None = None, regression: bool = False
) -> dict[str, Param]:
    kind = "numeric target" if regression else "0/1 label"
    return {
        "path": Param("", "the CSV file (empty: the task's default location)"),
        "smiles_column": Param(smiles_column, "column holding the SMILES strings"),
        "label_column": Param(label_column, f"column holding the {kind}s"),
        "label_columns": Param(
            label_columns or [],
            f"several {kind} columns, one output each (empty or NaN cells "
            "are missing, left out of loss and metric); empty: dataset.label_column",
        ),
        "strict": Param(False, "refuse a file with bad rows instead of skipping them"),
        "download": Param(False, "download dataset.url when the file is missing (one process per machine)"),
        "url": Param(url, "where dataset.download fetches the file from", schemes=("http", "https")),
        "split": Param(
            "random", "random (stratified) or scaffold (Bemis-Murcko, needs RDKit)", choices=("random", "scaffold")
        ),
        "canonicalize": Param(False, "validate and canonicalise SMILES with RDKit (needs RDKit)"),
        "enumerate": Param(
            0,
            "randomised SMILES kept per training molecule (RDKit); each epoch a molecule is read "
            "as one of them or as written; 0: as written only",
            minimum=0,
            maximum=64,
        ),
        "eval_enumerate": Param(
            0,
            "dev and held-out predictions average the written SMILES and this many "
            "randomised ones (RDKit); 0: the written SMILES only",
            minimum=0,
            maximum=64,
        ),
        "molecule_features": Param(
            NO_FEATURES,
            "molecule-level features from Chemprop's featurizers (chemprop "
            "--molecule-featurizers): v1_rdkit_2d_normalized (200 RDKit descriptors, the "
            "Chemprop paper's), v1_rdkit_2d, rdkit_2d, morgan_binary, morgan_count, or several "
            "joined by '+' (morgan_count+v1_rdkit_2d_normalized); a graph model reads them "
            "beside the graph, model.name=features_ffn reads them alone; none: no features",
        ),
        "heldout_fraction": Param(0.1, "fraction of molecules held out", above=0, below=1),
        "dev_fraction": Param(0.2, "fraction of the rest used for model selection", above=0, below=1),
    }


UNCERTAINTY = Param(
    "none",
    "mve: a variance head beside each regression target (a softplus), the model trained with the Gaussian "
    "negative log-likelihood and answering a mean and a variance (mean-variance estimation); evidential: "
    "deep evidential regression (Chemprop's), answering a mean and the total variance; none: values only",
    choices=("none", "mve", "evidential"),
)


MODEL_PARAMS = {
    "embedding_dim": Param(128, "token embedding width", minimum=1),
    "d_model": Param(128, "recurrent hidden width", minimum=1),
    "num_layers": Param(3, "recurrent layers", minimum=1),
    "bidirectional": Param(True, "read the SMILES in both directions"),
    "dropout": Param(0.2, "dropout between layers and before the head", minimum=0, below=1),
    "cell": Param("lstm", "recurrent cell", choices=("lstm", "gru")),
    "uncertainty": UNCERTAINTY,
}


def uncertainty_loss(params: Mapping[str, Any], task_loss: str) -> str:
    """The loss a SMILES model trains with: ``gaussian_nll`` with a variance head, ``evidential`` with an
    evidential one, the task's otherwise."""
    if params.get("uncertainty", "none") == "none":
        return task_loss
    if task_loss != "mse":
        raise UserError(
            f"model.uncertainty={params['uncertainty']} adds a variance head to a regression model, and this "
            f"task trains a classifier (loss '{task_loss}'). Leave model.uncertainty=none for 0/1 labels "
            "(train.calibration=platt or isotonic calibrates their probabilities), or train a regression task."
        )
    return "gaussian_nll" if params["uncertainty"] == "mve" else "evidential"
