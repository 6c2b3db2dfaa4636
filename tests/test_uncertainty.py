"""Uncertainty and calibration on arrays: the evaluators agree with Chemprop's
(``chemprop.uncertainty``) and scikit-learn's on the same numbers, the calibrators fitted on dev
are Chemprop's z-scaling, a logistic regression and scikit-learn's isotonic regression, the
saved calibration answers what was fitted, and split-conformal intervals and sets hold their
coverage on exchangeable data. Every test here runs in this process, in well under a second."""

from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest
import torch
from sklearn.isotonic import IsotonicRegression
from sklearn.metrics import log_loss

from ddpx.api import UserError
from ddpx.records import uncertainty_metrics as um
from ddpx.records.calibration import Calibration, class_sets, fit_calibration, intervals, sigmoid
from ddpx.records.uncertainty_reports import record_uncertainty


def made_regression(n: int, seed: int, targets: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Targets, predicted means and variances, ``(n, targets)``: each target drawn around its
    mean with a standard deviation that varies by sample, which the variance over-states by 1.5 x."""
    rng = np.random.default_rng(seed)
    mean = rng.normal(0, 3, size=(n, targets))
    std = rng.uniform(0.2, 2.0, size=(n, targets))
    return mean + std * rng.standard_normal((n, targets)), mean, (1.5 * std) ** 2


def chemprop_evaluator(name: str):
    uncertainty = pytest.importorskip("chemprop.uncertainty")
    return uncertainty.UncertaintyEvaluatorRegistry[name]()


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (um.gaussian_nll, "nll-regression"),
        (um.miscalibration_area, "miscalibration_area"),
        (um.ence, "ence"),
        (um.uncertainty_spearman, "spearman"),
    ],
)
def test_the_regression_evaluators_are_chemprops(ours, theirs):
    targets, mean, variance = made_regression(250, seed=1, targets=2)
    as_tensor = [torch.from_numpy(a) for a in (mean, variance, targets)]
    expected = chemprop_evaluator(theirs).evaluate(*as_tensor, torch.ones(targets.shape, dtype=torch.bool))
    assert ours(targets, mean, variance) == pytest.approx(expected.double().numpy(), rel=1e-6, abs=1e-9)


def test_a_missing_target_is_left_out_of_its_column_only():
    targets, mean, variance = made_regression(120, seed=2, targets=2)
    targets[::4, 1] = np.nan
    whole = um.gaussian_nll(targets[:, :1], mean[:, :1], variance[:, :1])
    kept = ~np.isnan(targets[:, 1])
    second = um.miscalibration_area(targets[kept, 1:], mean[kept, 1:], variance[kept, 1:])
    values = um.gaussian_nll(targets, mean, variance), um.miscalibration_area(targets, mean, variance)
    assert values[0][0] == whole[0] and values[1][1] == second[0]


def test_the_interval_coverage_is_chemprops_conformal_coverage():
    targets, mean, variance = made_regression(300, seed=3)
    half = 1.645 * np.sqrt(variance)
    expected = chemprop_evaluator("conformal-coverage-regression").evaluate(
        torch.from_numpy(mean), torch.from_numpy(half), torch.from_numpy(targets), torch.ones(targets.shape, dtype=bool)
    )
    assert um.interval_coverage(targets, mean - half, mean + half) == pytest.approx(expected.double().numpy())


def test_the_classification_nll_is_the_log_loss_and_the_ece_its_binned_gap():
    rng = np.random.default_rng(4)
    probability = rng.uniform(0, 1, size=(400, 1))
    targets = (rng.uniform(0, 1, size=(400, 1)) < probability**1.5).astype(np.float64)
    assert um.binary_nll(targets, probability)[0] == pytest.approx(log_loss(targets[:, 0], probability[:, 0]))
    expected = 0.0
    for b in range(10):  # the definition, bin by bin
        inside = (probability[:, 0] >= b / 10) & ((probability[:, 0] < (b + 1) / 10) | (b == 9))
        if inside.any():
            expected += inside.mean() * abs(targets[inside, 0].mean() - probability[inside, 0].mean())
    assert um.binary_ece(targets, probability)[0] == pytest.approx(expected)
    assert um.binary_ece(targets, np.clip(targets, 0, 1))[0] == 0.0  # certain and right: no gap


def test_zscaling_is_chemprops_and_scales_the_variance_to_the_dev_errors():
    calibrator = pytest.importorskip("chemprop.uncertainty").ZScalingCalibrator()
    targets, mean, variance = made_regression(500, seed=5, targets=2)
    outputs = np.stack([mean, variance], axis=-1)  # (N, T, 2): what a variance head answers
    calibration = fit_calibration(outputs, targets, "gaussian_nll", ["a", "b"], "zscaling")
    tensors = [torch.from_numpy(a) for a in (mean, variance, targets)]
    theirs = calibrator.fit(*tensors, torch.ones(targets.shape, dtype=torch.bool)).scalings.numpy()
    ours = np.array([v["scale"] for v in calibration.fitted])
    assert ours == pytest.approx(theirs, rel=1e-3)
    assert ours == pytest.approx(1 / 1.5, rel=0.1)  # the variances over-state the spread 1.5-fold
    answered = calibration.answer(outputs)
    assert np.array_equal(answered[..., 0], mean) and answered[..., 1] == pytest.approx(variance * ours**2)


def test_platt_is_the_likeliest_line_for_platts_targets_and_isotonic_is_scikit_learns():
    """Platt's fit: the line on the logits likeliest for his targets ``(N+ + 1)/(N+ + 2)`` and
    ``1/(N- + 2)``, which Chemprop's ``PlattCalibrator`` uses when given the counts (its Nelder-Mead
    search from (1, 0) ends at that line or a less likely one); finite where the logits separate."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(6)
    logits = rng.normal(0, 3, size=(600, 2))
    targets = (rng.uniform(size=logits.shape) < sigmoid(0.4 * logits - 0.5)).astype(np.float64)
    targets[::7, 1] = np.nan
    platt = fit_calibration(logits, targets, "bce_with_logits", ["x", "y"], "platt")
    chemprop = (
        pytest.importorskip("chemprop.uncertainty")
        .PlattCalibrator()
        .fit(
            torch.from_numpy(sigmoid(logits)),
            torch.from_numpy(np.nan_to_num(targets)),
            torch.from_numpy(~np.isnan(targets)),
            training_targets=torch.from_numpy(np.nan_to_num(targets, nan=-1.0)),  # the counts: each column's
        )
    )
    for j, fitted in enumerate(platt.fitted):
        kept = ~np.isnan(targets[:, j])
        y = targets[kept, j]
        soft = np.where(y == 1, (y.sum() + 1) / (y.sum() + 2), 1 / (len(y) - y.sum() + 2))

        def nll(ab, z=logits[kept, j], t=soft):
            return np.sum(np.logaddexp(0, ab[0] * z + ab[1]) - t * (ab[0] * z + ab[1]))

        best = minimize(nll, [1.0, 0.0], method="BFGS", options={"gtol": 1e-10}).x
        assert [fitted["a"], fitted["b"]] == pytest.approx(best, abs=1e-5)
        assert nll([fitted["a"], fitted["b"]]) <= nll([float(chemprop.a[j]), float(chemprop.b[j])]) + 1e-6
    separable = fit_calibration(
        np.r_[-2.0 - rng.uniform(size=30), 2.0 + rng.uniform(size=30)][:, None],
        np.r_[np.zeros(30), np.ones(30)][:, None],
        "bce_with_logits",
        ["x"],
        "platt",
    ).fitted[0]
    assert 0 < separable["a"] < 10 and abs(separable["b"]) < 1  # a finite line, not lbfgs's largest slope
    isotonic = fit_calibration(logits, targets, "bce_with_logits", ["x", "y"], "isotonic")
    probability = sigmoid(isotonic.answer(logits))
    for j in range(2):
        kept = ~np.isnan(targets[:, j])
        fitted = IsotonicRegression(y_min=0, y_max=1, out_of_bounds="clip").fit(
            sigmoid(logits[kept, j]), targets[kept, j]
        )
        assert probability[:, j] == pytest.approx(fitted.predict(sigmoid(logits[:, j])), abs=1e-12)


def test_the_saved_calibration_answers_what_was_fitted(tmp_path):
    rng = np.random.default_rng(7)
    logits = rng.normal(size=(80,))
    targets = (rng.uniform(size=80) < 0.5).astype(np.float64)
    fitted = fit_calibration(logits, targets, "bce_with_logits", [""], "isotonic")
    loaded = Calibration.load(fitted.save(tmp_path).parent)
    assert (loaded.loss, loaded.labels, loaded.method, loaded.fitted) == (
        fitted.loss,
        fitted.labels,
        fitted.method,
        fitted.fitted,
    )
    assert [s.tolist() for s in loaded.scores] == [s.tolist() for s in fitted.scores]  # float64, exactly
    assert Calibration.load(tmp_path / "elsewhere") is None
    assert np.array_equal(loaded.answer(logits), fitted.answer(logits))
    assert np.array_equal(loaded.thresholds(0.8), fitted.thresholds(0.8))


def test_the_dev_scores_are_saved_as_arrays_beside_the_json_and_older_inline_ones_still_load(tmp_path):
    """15 689 molecules x 36 targets of dev scores were 12 MB of JSON text; as float64 arrays they are
    the 8 bytes a number numpy stores. A model saved with the scores inside the JSON loads as before."""
    targets, mean, variance = made_regression(2000, seed=3, targets=4)
    fitted = fit_calibration(np.stack([mean, variance], axis=-1), targets, "gaussian_nll", list("abcd"), "zscaling")
    new, old = tmp_path / "new", tmp_path / "old"
    fitted.save(new)
    assert sorted(p.name for p in new.iterdir()) == ["calibration.json", "conformal_scores.npz"]
    assert (new / "calibration.json").stat().st_size < 2_000  # the calibrator only
    assert (new / "conformal_scores.npz").stat().st_size < 4 * 2000 * 8 + 2_000
    old.mkdir()
    inline = json.loads((new / "calibration.json").read_text()) | {"scores": [s.tolist() for s in fitted.scores]}
    (old / "calibration.json").write_text(json.dumps(inline))  # as models saved before 2026-11-28 hold them
    for folder in (new, old):
        loaded = Calibration.load(folder)
        assert np.array_equal(loaded.thresholds(0.9), fitted.thresholds(0.9)), folder
        answered = loaded.answer(np.stack([mean[:5], variance[:5]], axis=-1))
        assert np.array_equal(intervals(loaded, answered, 0.9), intervals(fitted, answered, 0.9)), folder


@pytest.mark.parametrize("loss", ["mse", "gaussian_nll"])
def test_split_conformal_intervals_cover_90_percent_of_exchangeable_data(loss):
    targets, mean, variance = made_regression(6000, seed=8)
    outputs = mean[:, 0] if loss == "mse" else np.stack([mean[:, 0], variance[:, 0]], axis=-1)
    dev, heldout = slice(0, 2000), slice(2000, None)  # the same draws: exchangeable
    calibration = fit_calibration(outputs[dev], targets[dev, 0], loss, [""], "none")
    scores = np.abs(targets[dev, 0] - mean[dev, 0]) / (np.sqrt(variance[dev, 0]) if loss != "mse" else 1)
    assert calibration.thresholds(0.9)[0] == np.sort(scores)[math.ceil(2001 * 0.9) - 1]  # the 1801st smallest
    lower, upper = intervals(calibration, outputs[heldout], 0.9)
    assert abs(um.interval_coverage(targets[heldout], lower, upper)[0] - 0.9) < 0.03
    widths = (upper - lower)[:, 0]
    assert (np.ptp(widths) > 1) == (loss == "gaussian_nll")  # wider where the variance is larger
    assert calibration.thresholds(2000 / 2001 + 1e-9)[0] == math.inf  # past n / (n + 1): no finite threshold


def test_conformal_sets_of_labels_and_classes_cover_90_percent():
    rng = np.random.default_rng(9)
    logits = rng.normal(0, 2, size=(5000, 1))
    targets = (rng.uniform(size=logits.shape) < sigmoid(logits)).astype(np.float64)
    calibration = fit_calibration(logits[:2000], targets[:2000], "bce_with_logits", [""], "none")
    sets = class_sets(calibration, logits[2000:], 0.9)
    held = np.take_along_axis(sets, targets[2000:].astype(int)[..., None], axis=2)
    assert abs(held.mean() - 0.9) < 0.03
    classes = rng.normal(0, 2, size=(5000, 4))
    drawn = np.array([rng.choice(4, p=p) for p in np.exp(classes) / np.exp(classes).sum(1, keepdims=True)])
    calibration = fit_calibration(classes[:2000], drawn[:2000], "cross_entropy", list("abcd"), "none")
    sets = class_sets(calibration, classes[2000:], 0.9)
    assert abs(sets[np.arange(3000), drawn[2000:]].mean() - 0.9) < 0.03


def test_a_runs_record_measures_the_calibrated_answers_and_keeps_the_models_own():
    targets, mean, variance = made_regression(900, seed=10)
    outputs = torch.from_numpy(np.stack([mean[:, 0], variance[:, 0]], axis=-1))
    split = [
        types.SimpleNamespace(outputs=outputs[s], targets=torch.from_numpy(targets[s, 0]))
        for s in (slice(0, 300), slice(300, None))
    ]
    record = record_uncertainty(*split, "gaussian_nll", {"labels": ["y"]}, "zscaling")
    answered = record.calibration.answer(outputs[300:].numpy())
    columns = dict(record.columns)
    assert np.array_equal(columns["variance"], variance[300:, 0]) and np.array_equal(
        columns["calibrated_variance"], answered[:, 1]
    )
    kept = targets[300:], mean[300:], answered[:, 1:]
    assert record.metrics["heldout_nll"] == pytest.approx(um.gaussian_nll(*kept)[0])
    assert record.metrics["heldout_nll_uncalibrated"] == pytest.approx(
        um.gaussian_nll(targets[300:], mean[300:], variance[300:])[0]
    )
    assert (
        record.metrics["heldout_nll"] < record.metrics["heldout_nll_uncalibrated"]
    )  # the 1.5-fold over-statement undone
    inside = (columns["lower"] <= targets[300:, 0]) & (targets[300:, 0] <= columns["upper"])
    assert record.metrics["heldout_coverage_90"] == inside.mean()


def test_coverage_asks_for_a_share_between_0_and_1(tmp_path):
    from ddpx.records.conformal_columns import with_coverage

    with pytest.raises(UserError, match=r"between 0 and 1 \(such as 0.9\), not 1.5"):
        with_coverage(None, None, 1.5)
    calibration = Calibration(loss="mse", labels=[""], scores=[[0.1] * 20])
    with pytest.raises(UserError, match=r"Ask for at most 0.952"):
        with_coverage(None, calibration, 0.99)


def test_a_label_without_heldout_cells_is_left_out_of_the_means():
    rng = np.random.default_rng(11)
    targets = (rng.uniform(size=(60, 2)) < 0.5).astype(np.float64)
    logits = rng.normal(size=(60, 2))
    heldout = targets[:20].copy()
    heldout[:, 1] = np.nan  # label b is missing for every held-out molecule
    dev = types.SimpleNamespace(outputs=torch.from_numpy(logits[20:]), targets=torch.from_numpy(targets[20:]))
    held = types.SimpleNamespace(outputs=torch.from_numpy(logits[:20]), targets=torch.from_numpy(heldout))
    record = record_uncertainty(dev, held, "bce_with_logits", {"labels": ["a", "b"]}, "none")
    assert not any(name.endswith("/b") for name in record.metrics)
    assert (
        record.metrics["heldout_ece"]
        == record.metrics["heldout_ece/a"]
        == um.binary_ece(heldout[:, :1], sigmoid(logits[:20, :1]))[0]
    )


def test_the_evidential_loss_is_chemprops_and_its_eval_mode_answers_are_scored_as_gaussians():
    from ddpx.rank.loop.losses import loss_function

    metrics = pytest.importorskip("chemprop.nn.metrics")
    generator = torch.Generator().manual_seed(12)
    raw = torch.randn(40, 3, 4, generator=generator)
    outputs = torch.stack(
        [raw[..., 0], *(torch.nn.functional.softplus(raw[..., k]) + (k == 2) for k in (1, 2, 3))], dim=-1
    )  # (mean, v, alpha > 1, beta), as Chemprop's EvidentialFFN answers
    targets = torch.randn(40, 3, generator=generator)
    expected = metrics.EvidentialLoss()._calc_unreduced_loss(outputs, targets).mean()
    assert torch.allclose(loss_function("evidential")(outputs, targets), expected, rtol=1e-5)
    targets[::3, 1] = float("nan")  # a missing cell adds nothing
    kept = ~targets.isnan()
    expected = metrics.EvidentialLoss()._calc_unreduced_loss(outputs[kept], targets[kept]).mean()
    assert torch.allclose(loss_function("evidential")(outputs, targets), expected, rtol=1e-5)
    mean_variance = outputs[..., :2].abs() + 0.1
    gaussian = loss_function("gaussian_nll")(mean_variance, targets)
    assert torch.equal(loss_function("evidential")(mean_variance, targets), gaussian)
