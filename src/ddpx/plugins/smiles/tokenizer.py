"""A SMILES tokenizer that keeps multi-character tokens whole, and its vocabulary.

Bracket atoms (``[nH]``, ``[C@@H]``, ``[Na+]``), two-letter elements (``Cl``, ``Br``, ``Si``,
``Se``) and two-digit ring closures (``%10``) are single tokens. A string the tokens do not cover
exactly holds characters the tokenizer cannot represent.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

TOKEN_PATTERN = re.compile(
    r"(\[[^\[\]]+\]|Br|Cl|Si|Se|se|As|as|Te|te|B|C|N|O|S|P|F|I|H|K|b|c|n|o|s|p"
    r"|\(|\)|\.|=|#|-|\+|\\|/|:|~|@|\?|>|\*|\$|%[0-9]{2}|[0-9])"
)

PAD, UNK = "<pad>", "<unk>"


def tokenize(smiles: str) -> list[str] | None:
    """The tokens of ``smiles``, or ``None`` if some character cannot be represented."""
    tokens = TOKEN_PATTERN.findall(smiles)
    return tokens if "".join(tokens) == smiles else None


class Vocabulary:
    """Token ids: 0 is padding, 1 the unknown token, then tokens by frequency in training data."""

    def __init__(self, tokens: Sequence[str]):
        self.tokens = list(tokens)
        self.index = {token: i for i, token in enumerate(self.tokens)}

    @classmethod
    def build(cls, tokenized: Iterable[Sequence[str]]) -> Vocabulary:
        counts = Counter(token for tokens in tokenized for token in tokens)
        ordered = sorted(counts, key=lambda t: (-counts[t], t))
        return cls([PAD, UNK, *ordered])

    def encode(self, tokens: Sequence[str]) -> list[int]:
        unk = self.index[UNK]
        return [self.index.get(token, unk) for token in tokens]

    def __len__(self) -> int:
        return len(self.tokens)

    def to_list(self) -> list[str]:
        """A plain form to store in checkpoints (loadable with ``weights_only``)."""
        return list(self.tokens)
