"""Predicting with a trained SMILES model: the checkpoint carries the model and its vocabulary.

    predictor = SmilesPredictor.from_checkpoint("ddpx-runs/bbbp_rnn-.../checkpoints/best.pt")
    predictor.predict_proba(["CCO", "c1ccccc1N"])   # probabilities of label 1

The tasks' :class:`~ddpx.api.TablePredictor` does the same for a table with a ``smiles`` column
(``ddpx predict``, the logged MLflow model), for token, graph and features models alike: a ``probability``
of each label from a classifier (a softmax classifier: the ``predicted`` class's name and each
class's probability), a ``prediction`` in the targets' own units from a regression model.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from ddpx.api import UserError, load_checkpoint, model_state_from
from ddpx.plugins.smiles.chem import rdkit_parses
from ddpx.plugins.smiles.dataset import collate
from ddpx.plugins.smiles.model import build_smiles_rnn
from ddpx.plugins.smiles.tokenizer import Vocabulary, tokenize


class SmilesPredictor:
    def __init__(self, model: torch.nn.Module, vocabulary: Vocabulary):
        self.model = model.eval()
        self.vocabulary = vocabulary
        self.softmax = getattr(model, "softmax", False)

    @classmethod
    def from_checkpoint(cls, path: str | Path) -> SmilesPredictor:
        state = load_checkpoint(path)
        info = state.get("task_info") or {}
        if "vocab" not in info:
            raise UserError(f"checkpoint '{path}' holds no SMILES vocabulary; it was not saved by a SMILES task.")
        params = {k: v for k, v in state["recipe"]["model"].items() if k != "name"}
        model = build_smiles_rnn(params, info)
        model.load_state_dict(model_state_from(state))
        return cls(model, Vocabulary(info["vocab"]))

    @torch.no_grad()
    def predict_proba(self, smiles: Sequence[str], batch_size: int = 256) -> list:
        """The probability of label 1 per molecule (with several labels, a list per molecule; of a
        softmax classifier, each class's), in float64: in float32 every logit from about 17 on reads
        1.0, and confident molecules would tie."""
        return probabilities(self.outputs(smiles, batch_size), self.softmax).tolist()

    @torch.no_grad()
    def outputs(self, smiles: Sequence[str], batch_size: int = 256) -> torch.Tensor:
        """The model's eval-mode outputs: logits of a classifier, values of a regression model."""
        encoded = []
        for s in smiles:
            tokens = tokenize(s)
            if not s or tokens is None:
                raise UserError(f"cannot tokenize the SMILES {s!r}.")
            encoded.append(torch.tensor(self.vocabulary.encode(tokens), dtype=torch.long))
        outputs = []
        for start in range(0, len(encoded), batch_size):
            batch = [(seq, torch.tensor(0.0)) for seq in encoded[start : start + batch_size]]
            inputs, _ = collate(batch)
            outputs.append(self.model(inputs))
        return torch.cat(outputs)


SMILES_COLUMN = "smiles"
EXAMPLE_SMILES = ["CCO", "c1ccccc1N", "CC(=O)Oc1ccccc1C(=O)O"]


def predict_table(model: torch.nn.Module, info, table):
    """For every row's ``smiles``: a ``probability`` of label 1 (``probability_<label>`` for each of
    several labels), or for a regression model a ``prediction`` (``prediction_<target>``), and from
    a model with a variance head (``model.uncertainty``) its ``variance`` (``variance_<target>``, in
    the targets' units squared). Where the training file wrote a label's classes as words,
    ``predicted`` (``predicted_<label>``) answers in them (class 1's word from a probability of 0.5
    up); a softmax classifier answers the ``predicted`` class's name and each class's
    ``probability_<class>``. A row the model cannot read (a SMILES RDKit cannot parse, for every
    family, as in training; one the tokenizer cannot represent) is left unanswered, and a ``problem``
    column says why; the other rows are answered."""
    if SMILES_COLUMN not in getattr(table, "columns", ()):
        columns = ", ".join(map(str, getattr(table, "columns", []))) or "none"
        raise UserError(
            f"this SMILES model predicts from a '{SMILES_COLUMN}' column; the input has {columns}. "
            "Give a table (a CSV) with one SMILES string per row in a column named 'smiles'."
        )
    out = table[[SMILES_COLUMN]].copy()
    smiles = ["" if s != s or s is None else str(s) for s in table[SMILES_COLUMN]]  # an empty cell reads NaN
    tokens_read = info.get("inputs") not in ("molecule_graph", "molecule_features")
    parsed = (rdkit_parses(smiles) if tokens_read else None) or [True] * len(smiles)  # all at once, not per row
    problems = [unreadable(info, s, p) for s, p in zip(smiles, parsed)]
    kept = [i for i, problem in enumerate(problems) if not problem]
    regression, classes = info.get("task_type") == "regression", info.get("classes") or []
    labels = info.get("labels") or [""]
    answered, variances = [], None
    if kept:
        outputs = model_outputs(model.eval(), info, [smiles[i] for i in kept])
        if regression and outputs.dim() == (2 if len(labels) == 1 else 3):  # a variance head: (mean, variance)
            outputs, variances = outputs[..., 0], outputs[..., 1].tolist()
        answered = (outputs if regression else probabilities(outputs, bool(classes))).tolist()  # float64
    values = _in_rows(answered, kept, len(smiles), len(classes) or len(labels))
    if classes:
        _class_columns(out, values, classes)
    else:
        _answer_columns(
            out, values, labels, info.get("label_words") or {}, "prediction" if regression else "probability"
        )
    if variances is not None:
        _answer_columns(out, _in_rows(variances, kept, len(smiles), len(labels)), labels, {}, "variance")
    if len(kept) < len(smiles):
        out["problem"] = problems
    return out


def _in_rows(answered: list, kept: list[int], rows: int, width: int) -> list:
    """The answers of the ``kept`` rows in place among ``rows``, the others NaN (a list per row of ``width`` above 1)."""
    values: list = [[float("nan")] * width if width > 1 else float("nan")] * rows
    for i, value in zip(kept, answered):
        values[i] = value
    return values


def probabilities(logits: torch.Tensor, softmax: bool) -> torch.Tensor:
    """Each label's probability, or with ``softmax`` each class's, in float64 (as predict_proba)."""
    return torch.softmax(logits.double(), dim=-1) if softmax else torch.sigmoid(logits.double())


def _class_columns(out, values: list, classes: list[str]) -> None:
    """``predicted``: the most probable class's name; ``probability_<class>``: each class's probability."""
    out["predicted"] = [
        "" if row[0] != row[0] else classes[max(range(len(row)), key=row.__getitem__)] for row in values
    ]
    for k, name in enumerate(classes):
        out[f"probability_{name}"] = [row[k] for row in values]


def _answer_columns(out, values: list, labels: list[str], words: dict, column: str) -> None:
    several = len(labels) > 1
    for j, name in enumerate(labels):
        suffix = f"_{name}" if several else ""
        scores = [row[j] for row in values] if several else values
        out[f"{column}{suffix}"] = scores
        if name in words:
            out[f"predicted{suffix}"] = ["" if p != p else words[name][int(p >= 0.5)] for p in scores]


def unreadable(info, smiles: str, rdkit_parsed: bool = True) -> str:
    """Why the model cannot read ``smiles`` ("" when it can); ``rdkit_parsed``: whether RDKit parses
    it, for a token model (True without RDKit)."""
    if not smiles.strip():
        return "an empty SMILES"
    if info.get("inputs") in ("molecule_graph", "molecule_features"):
        from chemprop.utils import make_mol

        try:
            make_mol(smiles)
        except (RuntimeError, ValueError):
            return "RDKit cannot parse this SMILES"
        return ""
    if not tokenize(smiles):
        return "characters the SMILES tokenizer cannot represent"
    # the BiLSTM left molecules RDKit cannot parse out of its training as every family does: it
    # leaves them unanswered too (without RDKit it kept every row, and answers every row)
    return "" if rdkit_parsed else "RDKit cannot parse this SMILES"


@torch.no_grad()
def model_outputs(model: torch.nn.Module, info, smiles: list[str]) -> torch.Tensor:
    """Eval-mode outputs for the input form the model was trained on."""
    if info.get("inputs") == "molecule_graph":
        from ddpx.plugins.smiles.graphs import graph_outputs
        from ddpx.plugins.smiles.params import NO_FEATURES

        return graph_outputs(model, smiles, molecule_features=info.get("molecule_features", NO_FEATURES))
    if info.get("inputs") == "molecule_features":
        from ddpx.plugins.smiles.vectors import vector_outputs

        return vector_outputs(model, smiles, info["molecule_features"])
    return SmilesPredictor(model, Vocabulary(info["vocab"])).outputs(smiles)


def example_table(info):
    import pandas as pd

    return pd.DataFrame({SMILES_COLUMN: EXAMPLE_SMILES})
