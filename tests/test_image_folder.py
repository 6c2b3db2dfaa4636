"""``image_folder``: a user's own images in a folder per class (PNG and JPEG of mixed sizes) train on
real ranks and predict class names; a folder that cannot train is an exit-2 error with no run."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from image_files import class_images
from PIL import Image

CLASSES = ["circle", "cross", "square"]


def write_image_folder(folder: Path, per_class: int = 24, seed: int = 0) -> Path:
    """A sub-folder per class; each image its class's pattern plus noise, at 20-48 px, as PNG or JPEG."""
    rng = np.random.default_rng(seed)
    for label, name in enumerate(CLASSES):
        (folder / name).mkdir(parents=True)
        pixels = class_images(np.full(per_class, label), 3, 32, seed + label)
        for i, image in enumerate(pixels):
            size = int(rng.integers(20, 49))
            picture = Image.fromarray(image.transpose(1, 2, 0)).resize((size, size))
            picture.save(folder / name / f"{i}.{'png' if i % 2 else 'jpg'}")
    return folder


@pytest.mark.slow
def test_an_image_folder_trains_on_two_ranks_and_predicts_class_names(job_here, ddpx_here, tmp_path):
    photos = write_image_folder(tmp_path / "photos")
    keys = [f"dataset.path={photos}", "train.max_epochs=4", "train.lr=0.003", "dataset.augment=false"]
    result = job_here("image_folder_convnet", *keys, nproc=2)
    summary = json.loads((result.run_dirs()[0] / "summary.json").read_text())
    assert summary["heldout_samples"] == 15  # a fixed stratified 20 % of 72: 5 of each class
    assert summary["heldout"]["heldout_accuracy"] > 0.6, summary  # chance is 1/3
    assert_heldout_reports_agree(result.run_dirs()[0] / "reports", summary, CLASSES)
    new = tmp_path / "new"
    new.mkdir()
    for label, name in enumerate(CLASSES):
        Image.fromarray(class_images(np.array([label]), 3, 32, 99)[0].transpose(1, 2, 0)).save(new / f"{name}.png")
    out = tmp_path / "predicted.csv"
    answer = ddpx_here("predict", str(result.run_dirs()[0] / "model"), str(new), "--output", str(out))
    assert answer.returncode == 0, answer.output
    rows = list(csv.DictReader(out.open()))
    assert {r["predicted"] for r in rows} <= set(CLASSES) and len(rows) == 3
    assert sum(Path(r["path"]).stem == r["predicted"] for r in rows) >= 2
    predicted_files_answer_as_in_training(ddpx_here, result.run_dirs()[0], photos, tmp_path)


def predicted_files_answer_as_in_training(ddpx_here, run_dir: Path, photos: Path, tmp_path: Path) -> None:
    """The held-out images, 20-48 px PNG and JPEG files, given to `ddpx predict` as files: each
    answers the probability the run recorded for it (read, converted and resized as in training)."""
    import torch

    from ddpx.plugins.vision.data import stratified_dev_split
    from ddpx.plugins.vision.image_folder import HELDOUT_SEED, scan

    _, samples = scan({"path": str(photos)})
    targets = torch.tensor([target for _, target in samples])
    _, heldout = stratified_dev_split(targets, 0.2, HELDOUT_SEED, "the test's images")
    recorded = list(csv.DictReader((run_dir / "reports" / "heldout_predictions.csv").open(newline="")))
    files = tmp_path / "heldout-files"
    files.mkdir()
    for order, index in enumerate(heldout.tolist()):  # in held-out order, named so that `predict` keeps it
        source = Path(samples[index][0])
        shutil.copy(source, files / f"{order:02d}{source.suffix}")
    out = tmp_path / "heldout-predicted.csv"
    answer = ddpx_here("predict", str(run_dir / "model"), str(files), "--output", str(out))
    assert answer.returncode == 0, answer.output
    answered = sorted(csv.DictReader(out.open()), key=lambda row: Path(row["path"]).name)
    assert len(answered) == len(recorded) == 15
    for mine, theirs in zip(answered, recorded):
        assert mine["predicted"] == CLASSES[int(theirs["predicted"])]
        assert float(mine["probability"]) == pytest.approx(float(theirs[f"probability_{mine['predicted']}"]), abs=1e-5)


def assert_heldout_reports_agree(reports: Path, summary: dict, classes: list[str]) -> None:
    """The held-out accuracy and macro ROC-AUC are scikit-learn's over the predictions file, and
    the confusion matrix counts every held-out sample once."""
    from sklearn.metrics import accuracy_score, roc_auc_score

    rows = list(csv.DictReader((reports / "heldout_predictions.csv").open(newline="")))
    targets = [int(r["target"]) for r in rows]
    probabilities = [[float(r[f"probability_{c}"]) for c in classes] for r in rows]
    heldout = summary["heldout"]
    assert heldout["heldout_roc_auc"] == roc_auc_score(targets, probabilities, multi_class="ovr", average="macro")
    assert heldout["heldout_accuracy"] == accuracy_score(targets, [int(r["predicted"]) for r in rows])
    matrix = list(csv.reader((reports / "heldout_confusion_matrix.csv").open(newline="")))
    assert matrix[0] == ["true", *classes] and [row[0] for row in matrix[1:]] == classes
    assert sum(int(n) for row in matrix[1:] for n in row[1:]) == summary["heldout_samples"] == len(rows)


def empty(folder: Path) -> Path:
    folder.mkdir()
    return folder


def class_without_images(folder: Path) -> Path:
    write_image_folder(folder, per_class=3)
    for image in (folder / "cross").iterdir():
        image.unlink()
    return folder


def one_class(folder: Path) -> Path:
    write_image_folder(folder, per_class=3)
    for name in ("cross", "square"):
        shutil.rmtree(folder / name)
    return folder


def unreadable_image(folder: Path) -> Path:
    write_image_folder(folder, per_class=4)
    (folder / "cross" / "9.png").write_bytes(b"\x89PNG not really")
    return folder


def no_folder(folder: Path) -> Path:
    return folder.parent / "nowhere"


@pytest.mark.parametrize(
    "make, said",
    [
        (empty, "cannot train an image classifier"),
        (class_without_images, "cannot train an image classifier"),
        (one_class, "has one class (circle)"),
        (unreadable_image, "cannot read the image"),
        (no_folder, "is not a folder"),
    ],
    ids=["empty", "a class without images", "one class", "an unreadable image", "no folder"],
)
def test_a_folder_that_cannot_train_is_a_clear_error_before_launch(ddpx_here, tmp_path, make, said):
    folder = make(tmp_path / "photos")
    result = ddpx_here("recipe", "image_folder_convnet", f"dataset.path={folder}", "--tracking", "none")
    assert result.returncode == 2 and said in result.stderr and "Traceback" not in result.output, result.output
    assert result.run_dirs() == []
