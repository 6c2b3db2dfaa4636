"""Building the SMILES task's splits on every rank: read, split, tokenize, encode."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ddpx.api import DataRequest, TaskData
from ddpx.plugins.smiles.chem import canonicalizer, rdkit_parses
from ddpx.plugins.smiles.csv_table import SmilesTable, read_smiles_csv
from ddpx.plugins.smiles.dataset import SmilesDataset, collate
from ddpx.plugins.smiles.download import ensure_file
from ddpx.plugins.smiles.enumeration import EnumeratedSmilesDataset, encoded, enumerate_all
from ddpx.plugins.smiles.file_checks import dataset_path, label_columns
from ddpx.plugins.smiles.parsed_rows import SPLIT_NAMES, parsed_splits
from ddpx.plugins.smiles.scaling import SCALER_KEY, fit_scaler, standardised
from ddpx.plugins.smiles.splits import random_split, scaffold_split
from ddpx.plugins.smiles.tokenizer import Vocabulary


def build_smiles_data(
    request: DataRequest, default_path: Callable[[], Path | None], missing_hint: str, regression: bool = False
) -> TaskData:
    """The three splits in the form the run's model asked for (``request.inputs``): token
    sequences (the default), molecular graphs or molecule feature vectors. The split is the same
    for all."""
    p = request.params
    path = dataset_path(p, default_path)
    ensure_file(
        path,
        p["url"],
        download=p["download"],
        is_local_main=request.is_local_main,
        barrier=request.barrier,
        missing_hint=missing_hint.format(path=path, url=p["url"]),
    )
    table = read_table(path, p, regression, request.log)
    splits = split_table(table, p, request.seed, request.log, f"'{path}'")
    info: dict[str, Any] = {
        "molecules": len(table.labels),
        "labels": table.label_names,
        "task_type": "regression" if regression else "classification",
    }
    if table.label_words:
        info["label_words"] = table.label_words  # predictions answer in the file's words
    if table.classes:
        info["classes"] = table.classes  # a softmax over them; predictions answer their names
    labels = split_labels(table, splits, info)
    source = str(path.resolve())
    if request.inputs == "molecule_graph":
        from ddpx.plugins.smiles.graphs import graph_task_data

        return graph_task_data(
            table.smiles,
            splits,
            labels,
            info,
            source,
            request.log,
            p["molecule_features"],
            request=request,
            lines=table.lines,
        )
    if request.inputs == "molecule_features":
        from ddpx.plugins.smiles.vectors import vector_task_data

        return vector_task_data(
            table.smiles, splits, labels, info, source, request.log, p["molecule_features"], lines=table.lines
        )
    return token_task_data(
        table, *parsed_only(table, splits, labels, source, request.log), info, p, request.seed, source
    )


def parsed_only(table: SmilesTable, splits, labels, source: str, log: Callable[[str], None]):
    """The splits without the molecules RDKit cannot parse, which every model family leaves out
    (the graph and features models have no input for them), so two families on one file train on
    the same molecules. Without RDKit nothing can tell them: every row stays, and the log says so."""
    parsed = rdkit_parses(table.smiles)
    if parsed is None:
        log(
            "RDKit is not installed, so the molecules it cannot parse, which every model family leaves out "
            "where it is, cannot be found: every row the tokenizer reads stays in its split."
        )
        return splits, labels
    if all(parsed):
        return splits, labels
    kept = parsed_splits(
        splits,
        labels,
        parsed,
        source,
        log,
        empty="so no model has anything to train or score there.",
        lines=table.lines,
    )
    return {name: rows for name, (rows, _) in kept.items()}, {name: values for name, (_, values) in kept.items()}


def read_table(path: Path, p: Mapping[str, Any], regression: bool, log: Callable[[str], None]) -> SmilesTable:
    canonical = canonicalizer() if p["canonicalize"] else None
    table = read_smiles_csv(
        path, p["smiles_column"], label_columns(p), strict=p["strict"], canonical=canonical, regression=regression
    )
    for column, (negative, positive) in table.label_words.items():
        log(f"the labels of '{column}' are words: '{negative}' is class 0, '{positive}' class 1")
    if table.classes:
        shown = ", ".join(f"'{name}' {k}" for k, name in enumerate(table.classes[:12]))
        log(
            f"the labels of '{table.label_names[0]}' are {len(table.classes)} classes ({shown}"
            f"{', ...' if len(table.classes) > 12 else ''}): a softmax classifier, judged by the macro ROC-AUC"
        )
    if table.skipped:
        count = sum(len(lines) for lines in table.skipped.values())
        log(
            f"skipped {count} bad row(s) of {path}: {table.skipped_report()}. "
            "Set dataset.strict=true to refuse such files instead."
        )
    return table


def split_table(
    table: SmilesTable, p: Mapping[str, Any], seed: int, log: Callable[[str], None], source: str
) -> dict[str, Sequence[int]]:
    """Train, dev and held-out row indices: scaffold sets, or random (stratified for one class label)."""
    if p["split"] == "scaffold":
        train, dev, heldout = scaffold_split(table.smiles, p["heldout_fraction"], p["dev_fraction"], source=source)
    else:
        stratify = len(table.label_names) == 1 and not table.regression
        train, dev, heldout = random_split(
            table.labels,
            seed,
            p["heldout_fraction"],
            p["dev_fraction"],
            stratify=stratify,
            source=source,
            names=class_names(table),
        )
    splits = {"train": train, "dev": dev, "heldout": heldout}
    if len(table.label_names) > 1 and not table.regression:
        log_one_class_labels(table, {"dev": dev, "held-out": heldout}, log)
    if table.classes:
        log_absent_classes(table, splits, log)
    return splits


def class_names(table: SmilesTable) -> list[str] | None:
    """The names of one label column's classes, where the file gives them (words, or several classes)."""
    return table.classes or table.label_words.get(table.label_names[0]) or None


def log_absent_classes(table: SmilesTable, splits: Mapping[str, Sequence[int]], log: Callable[[str], None]) -> None:
    """Name the classes a split lacks (a scaffold split may leave one out): the model cannot learn a
    class its training split lacks, and a split's macro ROC-AUC is the mean over the classes it has."""
    for name, indices in splits.items():
        present = {table.labels[i] for i in indices}
        absent = [c for k, c in enumerate(table.classes) if k not in present]
        if absent:
            log(
                f"{len(absent)} class(es) have no molecule in the {SPLIT_NAMES[name]} split ({', '.join(absent)}): "
                + (
                    "the model cannot learn them."
                    if name == "train"
                    else "its macro ROC-AUC is the other classes' mean."
                )
            )


def split_labels(table: SmilesTable, splits: Mapping[str, Sequence[int]], info: dict[str, Any]) -> dict[str, list]:
    """Each split's labels; a regression task's training targets standardised on the training
    split (the scaler goes into ``info``, so the model answers in the file's units)."""
    labels = {name: [table.labels[i] for i in indices] for name, indices in splits.items()}
    if table.regression:
        rows = [row if isinstance(row, tuple) else (row,) for row in labels["train"]]
        info[SCALER_KEY] = fit_scaler(rows)
        scaled = standardised(rows, info[SCALER_KEY])
        labels["train"] = scaled if len(table.label_names) > 1 else [row[0] for row in scaled]
    return labels


def token_task_data(
    table: SmilesTable,
    splits: Mapping[str, Sequence[int]],
    labels: Mapping[str, list],
    info: dict[str, Any],
    p: Mapping[str, Any],
    seed: int,
    source: str,
) -> TaskData:
    """Token sequences; a vocabulary of the training molecules' tokens; SMILES enumeration."""
    train_ways = enumerate_all(table.smiles, table.tokens, splits["train"], p["enumerate"], seed)
    vocabulary = Vocabulary.build(tokens for ways in train_ways for tokens in ways)  # training molecules only

    def dataset(name, ways, pick) -> SmilesDataset | EnumeratedSmilesDataset:
        if len(ways[0]) == 1:
            return SmilesDataset([vocabulary.encode(w[0]) for w in ways], labels[name])
        return EnumeratedSmilesDataset(encoded(ways, vocabulary.encode), labels[name], pick)

    def evaluated(name):
        return dataset(name, enumerate_all(table.smiles, table.tokens, splits[name], p["eval_enumerate"], seed), "all")

    return TaskData(
        train=dataset("train", train_ways, "random"),
        dev=evaluated("dev"),
        heldout=evaluated("heldout"),
        info={**info, "inputs": "smiles_tokens", "vocab": vocabulary.to_list(), "pad_id": 0},
        collate_fn=collate,
        source=source,
    )


def log_one_class_labels(table: SmilesTable, splits: Mapping[str, Sequence[int]], log: Callable[[str], None]) -> None:
    """Name the labels a split cannot score: fewer than two classes among its molecules that
    have the label. They are left out of that split's mean ROC-AUC."""
    for split_name, indices in splits.items():
        unscored = [
            name
            for j, name in enumerate(table.label_names)
            if len({table.labels[i][j] for i in indices if table.labels[i][j] == table.labels[i][j]}) < 2
        ]
        if unscored:
            log(
                f"{len(unscored)} label(s) have one class (or none) in the {split_name} split and are left out of its "
                f"mean ROC-AUC: {', '.join(unscored)}"
            )
