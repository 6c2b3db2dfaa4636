"""SMILES enumeration (randomised SMILES of each molecule, RDKit), averaged predictions over
several SMILES, and the length-bucketed sampler."""

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

from ddpx.plugins.samplers import LengthBucketedSampler
from ddpx.plugins.smiles.dataset import collate
from ddpx.plugins.smiles.enumeration import EnumeratedSmilesDataset, enumerate_all, written_ways
from ddpx.plugins.smiles.model import SmilesRNN
from ddpx.plugins.smiles.tokenizer import Vocabulary, tokenize

Chem = pytest.importorskip("rdkit.Chem")
MOLECULES = ["c1ccccc1CCN(C)C(=O)O", "CC(Cl)c1ccc(O)cc1", "OCC", "C1CCNCC1C(=O)N"]


def canonical(smiles: str) -> str:
    return Chem.MolToSmiles(Chem.MolFromSmiles(smiles))


def test_each_way_of_writing_a_molecule_is_the_same_molecule_and_the_seed_fixes_them():
    smiles = MOLECULES[0]
    ways = written_ways(smiles, tokenize(smiles), 4, seed=7)
    assert len(ways) == 5 and ways[0] == tokenize(smiles)  # as written first
    assert len({"".join(w) for w in ways}) > 2, "randomised SMILES differ from each other"
    assert {canonical("".join(w)) for w in ways} == {canonical(smiles)}
    assert written_ways(smiles, tokenize(smiles), 4, seed=7) == ways
    assert written_ways(smiles, tokenize(smiles), 4, seed=8) != ways
    assert written_ways("not a molecule", ["C"], 2, seed=0) == [["C"]] * 3  # unparsable: the written form stands in


def test_a_training_molecule_is_read_a_different_way_as_it_is_drawn_again():
    tokens = [tokenize(s) for s in MOLECULES]
    ways = enumerate_all(MOLECULES, tokens, range(4), 3, seed=0)
    vocabulary = Vocabulary.build(t for molecule in ways for t in molecule)
    data = EnumeratedSmilesDataset([[vocabulary.encode(t) for t in m] for m in ways], [1, 0, 1, 0], pick="random")
    torch.manual_seed(0)
    drawn = {tuple(data[0][0].tolist()) for _ in range(40)}
    assert len(drawn) > 1 and drawn <= {tuple(vocabulary.encode(t)) for t in ways[0]}
    assert data.lengths() == [len(t) for t in tokens]


@pytest.mark.parametrize("classes", [0, 3])  # one logit per molecule, or a softmax over three classes
def test_averaged_predictions_are_the_mean_probability_of_each_molecules_smiles(classes):
    tokens = [tokenize(s) for s in MOLECULES]
    ways = enumerate_all(MOLECULES, tokens, range(4), 2, seed=0)
    vocabulary = Vocabulary.build(t for molecule in ways for t in molecule)
    data = EnumeratedSmilesDataset([[vocabulary.encode(t) for t in m] for m in ways], [1, 0, 1, 0], pick="all")
    (inputs, labels) = collate([data[i] for i in range(4)])
    assert inputs[0].shape[0] == 12 and inputs[2] == 3 and labels.tolist() == [1, 0, 1, 0]
    torch.manual_seed(0)
    model = SmilesRNN(
        len(vocabulary), embedding_dim=8, d_model=8, num_layers=1, num_labels=classes or 1, softmax=bool(classes)
    ).eval()

    def probability(logits):
        return torch.softmax(logits, dim=-1) if classes else torch.sigmoid(logits)

    with torch.no_grad():
        averaged = probability(model(inputs))
        one_by_one = [
            probability(model(collate([(seq, torch.tensor(0.0))])[0]))[0] for molecule in data.ways for seq in molecule
        ]
    expected = torch.stack(one_by_one).reshape(4, 3, *averaged.shape[1:]).mean(dim=1)
    assert averaged.shape == ((4, 3) if classes else (4,)) and torch.allclose(averaged, expected, atol=1e-6)


def padding(lengths, order, batch=16):
    return sum(
        max(lengths[i] for i in order[s : s + batch]) * len(order[s : s + batch])
        - sum(lengths[i] for i in order[s : s + batch])
        for s in range(0, len(order), batch)
    )


def test_length_buckets_give_every_rank_an_equal_share_with_far_less_padding():
    generator = torch.Generator().manual_seed(0)
    lengths = torch.randint(5, 90, (1001,), generator=generator).tolist()
    samplers = [LengthBucketedSampler(lengths, rank=r, world_size=3, seed=4) for r in range(3)]
    orders = [list(s) for s in samplers]
    assert [len(o) for o in orders] == [len(s) for s in samplers] == [334] * 3
    assert {i for order in orders for i in order} == set(range(1001))  # every sample; two repeated to even the shares
    plain = [list(DistributedSampler(range(1001), num_replicas=3, rank=r, seed=4)) for r in range(3)]
    assert sum(padding(lengths, o) for o in orders) * 3 < sum(padding(lengths, o) for o in plain)
    again = LengthBucketedSampler(lengths, rank=0, world_size=3, seed=4)
    assert list(again) == orders[0], "the same order on every start (a resumed run reads it back)"
    again.set_epoch(1)
    assert list(again) != orders[0], "another order each epoch"
