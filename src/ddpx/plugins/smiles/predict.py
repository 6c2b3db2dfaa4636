"""Predicting with a trained SMILES model: the checkpoint carries the model and its vocabulary.

    predictor = SmilesPredictor.from_checkpoint("ddpx-runs/bbbp_rnn-.../checkpoints/best.pt")
    predictor.predict_proba(["CCO", "c1ccccc1N"])   # probabilities of label 1
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch

from ddpx.api import UserError, load_checkpoint, model_state_from
from ddpx.plugins.smiles import build_model
from ddpx.plugins.smiles.dataset import collate
from ddpx.plugins.smiles.tokenizer import Vocabulary, tokenize


class SmilesPredictor:
    def __init__(self, model: torch.nn.Module, vocabulary: Vocabulary):
        self.model = model.eval()
        self.vocabulary = vocabulary

    @classmethod
    def from_checkpoint(cls, path: str | Path) -> "SmilesPredictor":
        state = load_checkpoint(path)
        info = state.get("task_info") or {}
        if "vocab" not in info:
            raise UserError(f"checkpoint '{path}' holds no SMILES vocabulary; it was not saved by a SMILES task.")
        params = {k: v for k, v in state["recipe"]["model"].items() if k != "name"}
        model = build_model(params, info)
        model.load_state_dict(model_state_from(state))
        return cls(model, Vocabulary(info["vocab"]))

    @torch.no_grad()
    def predict_proba(self, smiles: Sequence[str], batch_size: int = 256) -> list[float]:
        encoded = []
        for s in smiles:
            tokens = tokenize(s)
            if not s or tokens is None:
                raise UserError(f"cannot tokenize the SMILES {s!r}.")
            encoded.append(torch.tensor(self.vocabulary.encode(tokens), dtype=torch.long))
        probabilities: list[float] = []
        for start in range(0, len(encoded), batch_size):
            batch = [(seq, torch.tensor(0.0)) for seq in encoded[start : start + batch_size]]
            inputs, _ = collate(batch)
            probabilities += torch.sigmoid(self.model(inputs)).tolist()
        return probabilities
