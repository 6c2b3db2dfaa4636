"""The plugin's own tests: the model alone, then its recipe through the real ddpx runner on 2 CPU
ranks (the ``ddpx_run`` fixture), on a small file in BBBP's format written here."""

import csv
import random

import torch
from ddpx_smiles_cnn.model import SmilesCNN


def model(regression: bool = False) -> SmilesCNN:
    torch.manual_seed(0)
    scaler = ([5.0], [2.0]) if regression else None
    return SmilesCNN(20, pad_id=0, num_outputs=1, scaler=scaler, embedding_dim=8, filters=4, widths=[3, 5], dropout=0.0)


def test_padding_never_changes_a_molecules_output():
    net = model().eval()
    tokens = torch.tensor([[3, 4, 5, 6]])
    padded = torch.tensor([[3, 4, 5, 6, 0, 0, 0, 0, 0]])
    assert torch.allclose(net((tokens, torch.tensor([4]))), net((padded, torch.tensor([4]))))


def test_a_regression_model_answers_in_the_targets_units_in_eval_mode():
    net = model(regression=True)
    inputs = (torch.tensor([[3, 4, 5, 6]]), torch.tensor([4]))
    standardised = net.train()(inputs)
    assert torch.allclose(net.eval()(inputs), standardised * 2.0 + 5.0)


def test_several_smiles_of_a_molecule_answer_their_mean_probability():
    net = model().eval()
    tokens, lengths = torch.tensor([[3, 4, 5, 0], [6, 7, 8, 9]]), torch.tensor([3, 4])
    both = net((tokens, lengths, 2))
    assert torch.allclose(torch.sigmoid(both), torch.sigmoid(net((tokens, lengths))).mean().reshape(1))


def test_the_recipe_learns_on_two_ranks(ddpx_run, tmp_path):
    rng = random.Random(0)
    path = tmp_path / "molecules.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["num", "name", "p_np", "smiles"])
        for i in range(300):
            label = i % 2
            chain = "C" * rng.randint(2, 8)
            writer.writerow([i, f"m{i}", label, f"{chain}Cl" if label else f"{chain}O"])
    result = ddpx_run(
        "bbbp_smiles_cnn", f"dataset.path={path}", "dataset.split=random", "train.max_epochs=3", "model.filters=16"
    )
    assert result.heldout["heldout_roc_auc"] > 0.9
    assert result.summary.heldout_samples == 30
