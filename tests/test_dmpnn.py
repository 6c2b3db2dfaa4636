"""The ``dmpnn`` model and molecular graphs: Chemprop's featurization, cached; batches of Chemprop's
graphs that score the same however they are cut; the model equal to Chemprop's own MPNN; Chemprop's
learning-rate schedule step by step; a missing Chemprop named before launch. On real ranks: the
real BBBP file, the same held-out value on 1, 2 and 3 ranks, and a third-party graph model."""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import torch

from ddpx.api import UserError

chemprop = pytest.importorskip("chemprop", reason="the graph model needs Chemprop (pip install 'ddpx[chem]')")

from real_data import BBBP, needs_bbbp  # noqa: E402

from ddpx.plugins.smiles import graph_cache  # noqa: E402
from ddpx.plugins.smiles.dmpnn import build_dmpnn  # noqa: E402
from ddpx.plugins.smiles.dmpnn_spec import DMPNN_PARAMS  # noqa: E402
from ddpx.plugins.smiles.graphs import collate_graphs, graph_outputs, graph_task_data  # noqa: E402
from ddpx.rank.loop.transfer import to_device  # noqa: E402

DEFAULTS = {name: param.default for name, param in DMPNN_PARAMS.items()}
CHEMPROP_WIDTHS = (  # the widths of Chemprop's default featurizer's atom and bond vectors (72, 14 in 2.3.1)
    chemprop.featurizers.SimpleMoleculeMolGraphFeaturizer().atom_fdim,
    chemprop.featurizers.SimpleMoleculeMolGraphFeaturizer().bond_fdim,
)
TINY = {**DEFAULTS, "hidden_size": 24, "ffn_hidden_size": 16, "depth": 2}
CHAIN = ["C", "CC", "O", "N", "C(=O)", "c1ccccc1", "C1CCNCC1", "C(C)C", "c1ccncc1", "[C@@H](O)"]
ENDS = ["F", "OC", "C#N", "N(C)C", "Br"]
UNPARSABLE = ["C1CC", "c1cccc1N(=O)(=O)=O"]  # an unclosed ring, a pentavalent nitrogen: RDKit refuses both


def valid_molecule(rng: random.Random, chlorine: bool) -> str:
    """A SMILES RDKit parses: chain fragments, an end group; chlorine at one end for label 1."""
    parts = [rng.choice(CHAIN) for _ in range(rng.randint(1, 4))] + [rng.choice(ENDS)]
    return ("Cl" + "".join(parts)) if chlorine else "".join(parts)


def write_graph_csv(path: Path, n: int = 150, seed: int = 0, unparsable: int = 0) -> Path:
    """BBBP's columns; label 1 exactly when the molecule carries a chlorine; ``unparsable`` rows
    RDKit cannot read (the tokenizer can) at the start, where the random split's seed puts them."""
    rng = random.Random(seed)
    lines = ["num,name,p_np,smiles"]
    for i in range(n):
        label = i % 3 != 0
        smiles = UNPARSABLE[i % 2] if i < unparsable else valid_molecule(rng, label)
        lines.append(f'{i + 1},"compound {i}",{int(label)},{smiles}')
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "data"
    monkeypatch.setenv("DDPX_DATA_DIR", str(folder))
    graph_cache._MEMORY.clear()
    return folder


def small_molecules(n_labels: int = 1, regression: bool = False):
    """42 molecules (the last two unparsable), their splits, each split's labels (a second label
    with missing cells when ``n_labels`` is 2) and the task's info."""
    rng = random.Random(1)
    smiles = [valid_molecule(rng, i % 2 == 0) for i in range(40)] + UNPARSABLE
    if n_labels == 1:
        labels = [float(i % 2 == 0) for i in range(len(smiles))]
    else:
        labels = [(float(i % 2 == 0), float("nan") if i % 5 == 0 else float(i % 3 == 0)) for i in range(len(smiles))]
    splits = {"train": list(range(0, 30)) + [40], "dev": list(range(30, 36)) + [41], "heldout": list(range(36, 40))}
    info = {
        "molecules": len(smiles),
        "labels": [f"y{j}" for j in range(n_labels)],
        "task_type": "regression" if regression else "classification",
    }
    if regression:
        info["target_scaler"] = {"mean": [3.0] * n_labels, "std": [2.0] * n_labels}
    return smiles, splits, {k: [labels[i] for i in v] for k, v in splits.items()}, info


def small_task(n_labels: int = 1, *, regression: bool = False, log=print, molecule_features: str = "none"):
    smiles, splits, labels, info = small_molecules(n_labels, regression)
    return smiles, splits, graph_task_data(smiles, splits, labels, info, "mols.csv", log, molecule_features)


def test_graphs_are_chemprops_featurization_and_unparsable_molecules_leave_their_split(data_dir):
    said = []
    smiles, splits, data = small_task(2, log=said.append)
    assert [len(data.train), len(data.dev), len(data.heldout)] == [30, 6, 4]
    assert said[-1].startswith("skipped 2 molecule(s) RDKit cannot parse (training 1, dev 1, held-out 0)")
    assert data.info["inputs"] == "molecule_graph" and data.info["molecules"] == 42
    assert (data.info["atom_features"], data.info["bond_features"]) == CHEMPROP_WIDTHS
    json.dumps(data.info)  # saved beside the model
    reference = chemprop.data.MoleculeDataset([chemprop.data.MoleculeDatapoint.from_smi(s) for s in smiles[:40]])
    for i in range(len(data.train)):
        graph, label = data.train[i]
        theirs = reference[splits["train"][i]].mg
        assert all(numpy.array_equal(numpy.asarray(a, float), numpy.asarray(b, float)) for a, b in zip(graph, theirs))
        assert label.shape == (2,)
    assert math.isnan(data.train[0][1][1])  # a missing cell stays missing


def test_graphs_are_featurized_once_and_kept_in_memory_and_on_disk(data_dir, monkeypatch):
    said = []
    small_task(log=said.append)
    (entry,) = (data_dir / "cache" / "molecule_graphs").iterdir()
    assert json.loads((entry / "meta.json").read_text())["molecules"] == 42
    small_task(log=said.append)
    graph_cache._MEMORY.clear()
    from_disk = small_task(log=said.append)[2]
    assert sum("featurizing 42 molecules" in line for line in said) == 1
    assert isinstance(
        from_disk.train.graphs.parts[0].atom_codes, numpy.memmap
    )  # the ranks of a machine share the page cache
    blocked = data_dir / "blocked"
    blocked.write_text("a file where the cache's folder would go")
    monkeypatch.setenv("DDPX_DATA_DIR", str(blocked))  # the cache cannot be written: the graphs stay in memory
    rng = random.Random(5)
    fresh = graph_cache.cached_graphs([valid_molecule(rng, True) for _ in range(5)], log=said.append)
    assert fresh.parsed.all() and not isinstance(fresh.parts[0].atom_codes, numpy.memmap)


def test_batches_train_and_score_the_same_however_they_are_cut(data_dir):
    _, _, data = small_task(2)
    torch.manual_seed(0)
    model = build_dmpnn(TINY, data.info)
    items = [data.train[i] for i in range(len(data.train))]
    inputs, targets = to_device(collate_graphs(items), torch.device("cpu"))
    assert type(inputs).__name__ == "BatchMolGraph" and targets.shape == (30, 2) and targets.dtype == torch.float32
    outputs = model(inputs)
    assert outputs.shape == (30, 2)
    present = ~torch.isnan(targets)
    torch.nn.functional.binary_cross_entropy_with_logits(outputs[present], targets[present]).backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    model.eval()
    with torch.no_grad():
        whole = model(collate_graphs(items)[0])
        pieces = torch.cat([model(collate_graphs(items[i : i + 7])[0]) for i in range(0, len(items), 7)])
    assert torch.allclose(whole, pieces, atol=1e-6, rtol=0)


def test_dmpnn_is_chemprops_mpnn_and_answers_logits(data_dir):
    _, _, data = small_task(1)
    torch.manual_seed(0)
    model = build_dmpnn({**DEFAULTS, "batch_norm": True}, data.info).eval()
    theirs = chemprop.models.MPNN(model.message_passing, model.agg, model.predictor, batch_norm=True).eval()
    theirs.bn.load_state_dict(model.bn.state_dict())
    batch = collate_graphs([data.heldout[i] for i in range(len(data.heldout))])[0]
    with torch.no_grad():
        assert model(batch).shape == (4,)
        assert torch.allclose(torch.sigmoid(model(batch)), theirs(batch).squeeze(-1), atol=1e-6)
    assert {"message_passing.W_i.weight", "predictor.ffn.0.0.weight"} <= set(model.state_dict())


def test_a_regression_dmpnn_answers_in_the_targets_units_in_eval_mode(data_dir):
    _, _, data = small_task(1, regression=True)
    model = build_dmpnn(TINY, data.info)
    batch = collate_graphs([data.dev[i] for i in range(len(data.dev))])[0]
    standardised = model(batch).detach()
    model.eval()
    assert torch.allclose(model(batch), standardised * 2.0 + 3.0, atol=1e-5)
    assert type(model.predictor).__name__ == "RegressionFFN"


@pytest.mark.parametrize(("n_targets", "uncertainty"), [(1, "mve"), (2, "mve"), (2, "evidential")])
def test_a_variance_head_is_chemprops_head_and_answers_a_mean_and_variance_in_the_targets_units(
    data_dir, n_targets, uncertainty
):
    _, _, data = small_task(n_targets, regression=True)
    model = build_dmpnn({**TINY, "uncertainty": uncertainty}, data.info)
    assert isinstance(model.predictor, chemprop.nn.MveFFN if uncertainty == "mve" else chemprop.nn.EvidentialFFN)
    batch = collate_graphs([data.dev[i] for i in range(len(data.dev))])[0]
    standardised = model(batch).detach()
    width = 2 if uncertainty == "mve" else 4  # (mean, variance) or (mean, v, alpha, beta) while training
    assert standardised.shape == ((6, width) if n_targets == 1 else (6, 2, width))
    variance = standardised[..., 1]
    if uncertainty == "evidential":  # Chemprop's total evidential variance
        v, alpha, beta = standardised[..., 1], standardised[..., 2], standardised[..., 3]
        variance = (1 + 1 / v) * beta / (alpha - 1)
    assert (variance > 0).all()
    model.eval()
    answered = model(batch)
    assert answered.shape[-1] == 2
    assert torch.allclose(answered[..., 0], standardised[..., 0] * 2.0 + 3.0, atol=1e-5)  # the scaler's std 2, mean 3
    assert torch.allclose(answered[..., 1], variance * 4.0, rtol=1e-5)  # a variance scales by std**2


def test_graph_outputs_answer_a_list_of_smiles_and_name_one_rdkit_cannot_parse(data_dir):
    smiles, _, data = small_task(1)
    model = build_dmpnn(TINY, data.info).train()
    outputs = graph_outputs(model, smiles[:5], batch_size=2)
    assert outputs.shape == (5,) and model.training
    model.eval()
    with torch.no_grad():
        assert torch.allclose(outputs, model(collate_graphs([data.train[i] for i in range(5)])[0]), atol=1e-6)
    with pytest.raises(UserError, match=r"RDKit cannot parse the SMILES 'C1CC'"):
        graph_outputs(model, ["CCO", "C1CC"])


def test_molecule_features_join_the_molecule_vector_as_in_chemprops_mpnn(data_dir):
    said = []
    smiles, splits, data = small_task(2, log=said.append, molecule_features="rdkit_2d")
    (_graph, features), _label = data.train[3]
    theirs = chemprop.featurizers.MoleculeFeaturizerRegistry["rdkit_2d"]()(
        chemprop.utils.make_mol(smiles[splits["train"][3]])
    )
    assert features.dtype == torch.float32 and torch.allclose(features, torch.tensor(theirs, dtype=torch.float32))
    scaler = data.info["molecule_feature_scaler"]
    assert data.info["molecule_features"] == "rdkit_2d" and len(scaler["mean"]) == len(scaler["std"]) == 217
    train = numpy.stack([numpy.asarray(data.train[i][0][1], numpy.float64) for i in range(len(data.train))])
    assert numpy.allclose(scaler["mean"], train.mean(axis=0), atol=1e-4)  # the training split's, in the info saved
    json.dumps(data.info)
    torch.manual_seed(0)
    model = build_dmpnn(DEFAULTS, data.info).eval()
    assert model.predictor.input_dim == 300 + 217
    transform = chemprop.nn.transforms.ScaleTransform(scaler["mean"], scaler["std"])
    mpnn = chemprop.models.MPNN(model.message_passing, model.agg, model.predictor, X_d_transform=transform).eval()
    (batch, batch_features), _ = collate_graphs([data.heldout[i] for i in range(len(data.heldout))])
    assert batch_features.shape == (4, 217)
    with torch.no_grad():  # Chemprop's MPNN with extra descriptors X_d, standardised the same way
        assert torch.allclose(torch.sigmoid(model((batch, batch_features))), mpnn(batch, X_d=batch_features), atol=1e-6)
        held = [smiles[row] for row in splits["heldout"]]
        answered = graph_outputs(model, held, molecule_features="rdkit_2d")  # ddpx predict, the logged model
        assert torch.allclose(answered, model((batch, batch_features)), atol=1e-6)
    with pytest.raises(ValueError, match="trained with molecule features"):
        model(batch)
    graph_cache._MEMORY.clear()
    small_task(2, log=said.append, molecule_features="rdkit_2d")
    assert sum("computing rdkit_2d features of 42 molecules" in line for line in said) == 1  # cached on disk
    assert len(list((data_dir / "cache" / "molecule_features").glob("*.npy"))) == 1


def lr_steps(schedule, optimizer, steps: int) -> list[float]:
    seen = []
    for _ in range(steps):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    return seen


@pytest.mark.parametrize("epochs, warmup, per_epoch", [(50, 2, 26), (5, 2, 3), (3, 0, 4), (2, 3, 5)])
def test_the_noam_schedule_is_chemprops_step_by_step(epochs, warmup, per_epoch):
    from chemprop.schedulers import build_NoamLike_LRSched

    from ddpx.plugin_host.registry import load_registry
    from ddpx.rank.loop.optim import build_schedule

    train = {
        "lr": 1e-3,
        "max_epochs": epochs,
        "warmup_steps": 0,
        "warmup_fraction": 0.0,
        "lr_schedule": "noam",
        "noam_warmup_epochs": warmup,
        "noam_init_lr_ratio": 0.1,
        "noam_final_lr_ratio": 0.1,
    }
    ours = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=train["lr"])
    theirs = torch.optim.Adam([torch.nn.Parameter(torch.zeros(1))], lr=1e-4)  # Chemprop: built with init_lr
    steps = epochs * per_epoch
    expected = lr_steps(
        build_NoamLike_LRSched(theirs, warmup * per_epoch, (epochs - warmup) * per_epoch, 1e-4, 1e-3, 1e-4),
        theirs,
        steps,
    )
    got = lr_steps(
        build_schedule(load_registry().get("schedules", train["lr_schedule"]), ours, train, per_epoch), ours, steps
    )
    assert got == pytest.approx(expected, rel=1e-12)
    with pytest.raises(UserError, match="noam warms up by itself"):
        load_registry().get("schedules", "noam").check({**train, "warmup_steps": 5})


def test_a_missing_chemprop_is_named_before_launch_and_the_spec_imports_nothing_heavy(monkeypatch):
    import importlib.util

    from ddpx.plugins.smiles.chemprop_check import require_chemprop

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "chemprop" else real(name, *a))
    with pytest.raises(UserError, match=r"model.name=dmpnn needs Chemprop 2.3 or newer.*pip install 'ddpx\[chem\]'"):
        require_chemprop("model.name=dmpnn")
    code = (
        "import sys, ddpx.plugins.smiles.dmpnn_spec as s; assert s.DMPNN_MODEL.inputs == 'molecule_graph'; "
        "print(sorted(m for m in ('torch', 'chemprop', 'lightning', 'rdkit') if m in sys.modules))"
    )
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"
    )


def test_chemprop_installed_on_a_system_without_x11_libraries_names_the_system_packages(monkeypatch, tmp_path):
    """As on a bare CUDA image: RDKit's drawing module, which Chemprop imports, cannot load libXrender."""
    from ddpx.plugins.smiles.chemprop_check import import_chemprop

    fake = tmp_path / "chemprop"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        "raise ImportError('libXrender.so.1: cannot open shared object file: No such file or directory')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "chemprop", raising=False)
    with pytest.raises(UserError) as caught:
        import_chemprop("model.name=dmpnn")
    message = str(caught.value)
    assert "lacks the library libXrender.so.1" in message and "apt-get install libxrender1" in message
    assert "pip install" not in message  # the extra is installed: installing it again would not help


def test_a_job_plans_the_modules_its_ranks_will_import_for_the_fork_server(tmp_path):
    from ddpx.cli.launch_options import settings_from
    from ddpx.cli.run_commands import recipe_command
    from ddpx.config.recipe import resolve_recipe
    from ddpx.launch.plan import plan_job
    from ddpx.plugin_host.registry import load_registry

    registry = load_registry()

    def planned(*argv: str, tracking=("--tracking", "none")):
        values = dict(recipe_command.make_context("ddpx recipe", [*argv, *tracking]).params)
        recipe = resolve_recipe(registry, values.pop("name"), values.pop("overrides"))
        return plan_job(registry, recipe, settings_from(registry, values)).imports

    path = write_graph_csv(tmp_path / "mols.csv", n=40)
    graph, rnn = planned("bbbp_dmpnn", f"dataset.path={path}"), planned("bbbp_rnn", f"dataset.path={path}")
    assert "chemprop" in graph and "chemprop" not in rnn  # ModelSpec.imports
    assert "sklearn.model_selection" in rnn  # TaskSpec.imports: the random split
    assert "sklearn.metrics" in rnn  # MetricSpec.imports: ROC-AUC
    assert "matplotlib.figure" in rnn  # the held-out figures rank 0 draws
    mlp = planned("mlp_synthetic")
    assert "sklearn.model_selection" not in mlp and "mlflow" not in mlp  # a generated set; no tracker
    sqlite = planned("mlp_synthetic", tracking=("--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"))
    assert {"mlflow", "mlflow.store.tracking.sqlalchemy_store"} <= set(sqlite)  # TrackerSpec.imports_for: its store
    from ddpx.api import Job, LaunchSettings
    from ddpx.plugins.trackers.mlflow.store_check import store_imports

    served = Job("r", "", {}, LaunchSettings(tracking_uri="http://127.0.0.1:5000"))
    assert store_imports(served) == ()  # a server's client is in mlflow itself


# ---- real ranks -------------------------------------------------------------------------------


@pytest.mark.slow
@needs_bbbp
def test_real_bbbp_dmpnn_on_2_ranks_reaches_a_roc_auc_a_broken_featurizer_cannot(run_ddpx, tmp_path):
    # the recipe's model, 3 epochs of batches of 32 per rank at a constant rate of 0.003, on a random
    # split (the scaffold split's held-out part is hard for every model: 0.63-0.74 after 50 epochs);
    # measured 0.864 (dev 0.776), where shuffled labels or featureless graphs score about 0.5
    result = run_ddpx(
        "recipe",
        "bbbp_dmpnn",
        "--nproc",
        "2",
        "--tracking",
        "none",
        f"dataset.path={BBBP}",
        "dataset.split=random",
        "train.max_epochs=3",
        "train.batch_size=32",
        "train.lr_schedule=constant",
        "train.lr=0.003",
        env={"DDPX_DATA_DIR": str(tmp_path / "data")},
        timeout=600,
    )
    assert result.returncode == 0, result.output
    assert result.stdout.count("skipped 11 molecule(s) RDKit cannot parse") == 1
    summary = result.summary()
    assert summary["heldout"]["heldout_roc_auc"] >= 0.75, summary


@pytest.mark.slow
def test_molecule_features_train_on_2_ranks_score_alike_on_1_2_and_3_and_predict_from_smiles(
    job_here, ddpx_here, tmp_path
):
    """A graph model with Morgan counts beside the graph, trained on 2 ranks (the features computed over
    them), scores the same held-out value evaluated on 1 and 3 ranks (uneven shards, filler calls);
    ``ddpx predict`` computes the features itself from SMILES."""
    path = write_graph_csv(tmp_path / "mols.csv", n=150, unparsable=2)
    env = {"DDPX_DATA_DIR": str(tmp_path / "data")}
    common = [
        f"dataset.path={path}",
        "dataset.molecule_features=morgan_count",
        "model.hidden_size=24",
        "model.ffn_hidden_size=16",
        "model.depth=2",
        "model.aggregation=mean",
        "train.eval_batch_size=4",
        "train.global_batch_size=0",  # 3 ranks: train.batch_size per rank
    ]
    (tmp_path / "w2").mkdir()
    trained = job_here(
        "bbbp_dmpnn",
        *common,
        "train.max_epochs=3",
        "train.batch_size=16",
        "train.lr_schedule=constant",
        "train.lr=0.005",
        nproc=2,
        env=env,
        cwd=tmp_path / "w2",
    )
    best = trained.run_dirs()[0] / "checkpoints" / "best.pt"
    heldouts = {2: trained.summary()}
    for nproc in (1, 3):
        workdir = tmp_path / f"w{nproc}"
        workdir.mkdir()
        result = job_here(
            "bbbp_dmpnn", *common, "train.max_epochs=0", f"train.init_from={best}", nproc=nproc, env=env, cwd=workdir
        )
        heldouts[nproc] = result.summary()
    values = {n: s["heldout"]["heldout_roc_auc"] for n, s in heldouts.items()}
    assert values[1] == values[2] == values[3] and values[2] > 0.6, values  # the same, and learned the chlorine
    losses = [s["heldout"]["heldout_loss"] for s in heldouts.values()]
    assert losses == pytest.approx([losses[0]] * 3, rel=1e-5)
    assert len({s["heldout_samples"] for s in heldouts.values()}) == 1

    model = trained.run_dirs()[0] / "model"
    info = json.loads((model / "model.json").read_text())["task_info"]
    assert info["molecule_features"] == "morgan_count" and len(info["molecule_feature_scaler"]["mean"]) == 2048
    table = tmp_path / "ask.csv"
    table.write_text("smiles\nClCCO\nCCO\nc1ccccc1CCl\n")
    answered = ddpx_here("predict", str(model), str(table), "--output", str(tmp_path / "answers.csv"))
    assert answered.returncode == 0, answered.output
    rows = (tmp_path / "answers.csv").read_text().splitlines()
    assert rows[0] == "smiles,probability" and len(rows) == 4
    assert all(0 < float(row.rsplit(",", 1)[1]) < 1 for row in rows[1:])


@pytest.mark.slow
def test_a_third_party_model_asks_for_graphs_through_the_api(job_here, tmp_path):
    path = write_graph_csv(tmp_path / "mols.csv", n=90)
    recipe = tmp_path / "graphs.toml"
    recipe.write_text(
        '# a third-party graph model on BBBP\nname = "graphs"\ndescription = "a test"\ntask = "bbbp"\n\n'
        '[model]\nname = "tiny_graph_model"\nhidden = 8\n\n[train]\noptimizer = "adam"\nlr = 0.01\n'
    )
    result = job_here(
        str(recipe),
        f"dataset.path={path}",
        "train.max_epochs=1",
        nproc=1,
        plugins=("ddpx_testplug_graph_model",),
        env={"DDPX_DATA_DIR": str(tmp_path / "data")},
    )
    info = json.loads((result.run_dirs()[0] / "model" / "model.json").read_text())["task_info"]
    assert info["inputs"] == "molecule_graph" and (info["atom_features"], info["bond_features"]) == CHEMPROP_WIDTHS
