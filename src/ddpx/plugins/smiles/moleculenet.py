"""MoleculeNet's files as tasks: where each is published, its columns, and where ddpx keeps it
(``<data folder>/<task>/<file>``; ``dataset.download=true`` fetches it there).

Classification: BBBP, BACE and HIV have one label; ClinTox, Tox21 and SIDER several (empty cells:
missing labels); binary cross-entropy, mean ROC-AUC. Regression: ESOL (log solubility),
Lipophilicity (logD) and FreeSolv (hydration free energy), one numeric target each; mean squared
error on standardised targets, RMSE in the file's units. The column names are the published files'
own (DeepChem's copies on S3, which MoleculeNet links to). Every task hands out token sequences
(the default), molecular graphs or molecule-level feature vectors, whichever the model asks for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ddpx.api import Param, TaskSpec

S3 = "https://deepchemdata.s3-us-west-1.amazonaws.com/datasets"
TOX21_LABELS = [
    "NR-AR",
    "NR-AR-LBD",
    "NR-AhR",
    "NR-Aromatase",
    "NR-ER",
    "NR-ER-LBD",
    "NR-PPAR-gamma",
    "SR-ARE",
    "SR-ATAD5",
    "SR-HSE",
    "SR-MMP",
    "SR-p53",
]
SIDER_LABELS = [
    "Hepatobiliary disorders",
    "Metabolism and nutrition disorders",
    "Product issues",
    "Eye disorders",
    "Investigations",
    "Musculoskeletal and connective tissue disorders",
    "Gastrointestinal disorders",
    "Social circumstances",
    "Immune system disorders",
    "Reproductive system and breast disorders",
    "Neoplasms benign, malignant and unspecified (incl cysts and polyps)",
    "General disorders and administration site conditions",
    "Endocrine disorders",
    "Surgical and medical procedures",
    "Vascular disorders",
    "Blood and lymphatic system disorders",
    "Skin and subcutaneous tissue disorders",
    "Congenital, familial and genetic disorders",
    "Infections and infestations",
    "Respiratory, thoracic and mediastinal disorders",
    "Psychiatric disorders",
    "Renal and urinary disorders",
    "Pregnancy, puerperium and perinatal conditions",
    "Ear and labyrinth disorders",
    "Cardiac disorders",
    "Nervous system disorders",
    "Injury, poisoning and procedural complications",
]


@dataclass(frozen=True)
class MoleculeNetFile:
    task: str
    title: str
    file: str
    smiles_column: str
    labels: list[str] = field(default_factory=list)
    regression: bool = False

    @property
    def url(self) -> str:
        return f"{S3}/{self.file}"

    def default_path(self) -> Path:
        from ddpx.api import data_root

        return data_root() / self.task / self.file

    def missing_hint(self) -> str:
        return (
            f"{self.title} is MoleculeNet's public file, at {{url}}. Download it to {{path}}, point dataset.path=FILE "
            "to a copy, or add dataset.download=true to fetch it."
        )


FILES = [
    MoleculeNetFile("bbbp", "BBBP", "BBBP.csv", "smiles", ["p_np"]),
    MoleculeNetFile("bace", "BACE", "bace.csv", "mol", ["Class"]),
    MoleculeNetFile("clintox", "ClinTox", "clintox.csv.gz", "smiles", ["FDA_APPROVED", "CT_TOX"]),
    MoleculeNetFile("tox21", "Tox21", "tox21.csv.gz", "smiles", TOX21_LABELS),
    MoleculeNetFile("sider", "SIDER", "sider.csv.gz", "smiles", SIDER_LABELS),
    MoleculeNetFile("hiv", "HIV", "HIV.csv", "smiles", ["HIV_active"]),
    MoleculeNetFile(
        "esol",
        "ESOL",
        "delaney-processed.csv",
        "smiles",
        ["measured log solubility in mols per litre"],
        regression=True,
    ),
    MoleculeNetFile("lipophilicity", "Lipophilicity", "Lipophilicity.csv", "smiles", ["exp"], regression=True),
    MoleculeNetFile("freesolv", "FreeSolv", "SAMPL.csv", "smiles", ["expt"], regression=True),
]
INPUTS = ("smiles_tokens", "molecule_graph", "molecule_features")  # what a model may ask for (ModelSpec.inputs)
SPLIT_IMPORTS = ("sklearn.model_selection",)  # a random split (splits.py), imported by each rank
DESCRIPTIONS = {
    "bbbp": "BBBP: does a molecule cross the blood-brain barrier? (MoleculeNet)",
    "bace": "BACE: does a molecule inhibit human beta-secretase 1? (MoleculeNet)",
    "clintox": "ClinTox: FDA approval and clinical-trial toxicity, 2 labels (MoleculeNet)",
    "tox21": "Tox21: 12 toxicity assays, labels often missing (MoleculeNet)",
    "sider": "SIDER: 27 side-effect classes of marketed drugs (MoleculeNet)",
    "hiv": "HIV: does a molecule inhibit HIV replication? 41k molecules (MoleculeNet)",
    "esol": "ESOL: aqueous solubility, log mol/L, regression (MoleculeNet)",
    "lipophilicity": "Lipophilicity: octanol/water distribution coefficient logD, regression (MoleculeNet)",
    "freesolv": "FreeSolv: hydration free energy, kcal/mol, regression (MoleculeNet)",
}


def _build(source: MoleculeNetFile, request):
    from ddpx.plugins.smiles.data import build_smiles_data

    return build_smiles_data(request, source.default_path, source.missing_hint(), regression=source.regression)


def _check(source: MoleculeNetFile, params, world_size: int = 1, inputs: str = ""):
    from ddpx.plugins.smiles.file_checks import check_smiles_params

    check_smiles_params(params, source.default_path, source.missing_hint(), regression=source.regression, inputs=inputs)


def moleculenet_tasks(params_for, predictor) -> list[TaskSpec]:
    """One task per file: binary cross-entropy (masked where a label is missing) and mean ROC-AUC,
    or mean squared error and RMSE for a regression file."""
    tasks = []
    for source in FILES:
        several = len(source.labels) > 1
        params: dict[str, Param] = params_for(
            smiles_column=source.smiles_column,
            url=source.url,
            label_column="" if several else source.labels[0],
            label_columns=source.labels if several else [],
            regression=source.regression,
        )
        loss, metric = ("mse", "rmse") if source.regression else ("bce_with_logits", "roc_auc")
        tasks.append(
            TaskSpec(
                source.task,
                DESCRIPTIONS[source.task],
                partial(_build, source),
                loss=loss,
                metric=metric,
                check=partial(_check, source),
                predictor=predictor,
                params=params,
                inputs=INPUTS,
                imports=SPLIT_IMPORTS,
            )
        )
    return tasks
