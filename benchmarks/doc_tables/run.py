"""The docs' tables made again from the committed records.

Every block of a page under ``docs/`` that stands between the two lines

    <!-- output of: COMMAND -->
    <!-- end of output -->

holds what COMMAND prints, run from the repository root. COMMAND is a report command with the path
of a committed record (``ddpx study report benchmarks/studies/moleculenet.json``, ``python
benchmarks/vs_chemprop/uncertainty.py --report benchmarks/vs_chemprop/uncertainty-esol-....json``,
...; ``reporters.py`` lists them). This script makes each block again in its own process with the
code the command runs, so a number in the docs is one a record in the repository makes, and a
report changed in code reaches every page that shows it:

    python benchmarks/doc_tables/run.py            # rewrite the blocks that differ, and name them
    python benchmarks/doc_tables/run.py --check    # name them and exit 1; write nothing

Either way it also names every committed record of those kinds that no page shows, and exits 1
for it (tests/test_doc_tables.py runs the check). A record is shown by adding its marker and end
line to the page where its prose is, then running this script.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run by path: `benchmarks` importable

from benchmarks.common.environment import ROOT
from benchmarks.doc_tables.reporters import committed_records, output_of

BLOCK = re.compile(r"^<!-- output of: (?P<command>.+?) -->\n(?P<held>.*?)^<!-- end of output -->$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    command: str
    held: str  # what the page holds between the two lines
    made: str  # what the command prints


def blocks_of(page: Path, root: Path) -> list[Block]:
    """Every block of one page, each with what its command prints now."""
    text = page.read_text(encoding="utf-8")
    found = BLOCK.finditer(text)
    return [Block(page, m["command"], m["held"], output_of(m["command"], root)) for m in found]


def pages_of(root: Path) -> list[Path]:
    return sorted((root / "docs").glob("**/*.md"))


def rewrite(page: Path, root: Path) -> None:
    """Replace each block of ``page`` with what its command prints."""
    text = page.read_text(encoding="utf-8")

    def made_again(m: re.Match) -> str:
        return f"<!-- output of: {m['command']} -->\n{output_of(m['command'], root)}<!-- end of output -->"

    page.write_text(BLOCK.sub(made_again, text), encoding="utf-8")


def unshown(blocks: list[Block], root: Path) -> list[str]:
    """The committed records that no block's command names."""
    named = {word for block in blocks for word in block.command.split()}
    return [record for record in committed_records(root) if record not in named]


def main(argv: list[str] | None = None, root: Path = ROOT) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 where a block differs")
    args = parser.parse_args(argv)
    blocks = [block for page in pages_of(root) for block in blocks_of(page, root)]
    stale = [block for block in blocks if block.held != block.made]
    for block in stale:
        print(f"{block.page.relative_to(root)}: `{block.command}` prints otherwise than the page holds")
    if stale and not args.check:
        for page in sorted({block.page for block in stale}):
            rewrite(page, root)
        print(f"rewritten: {len(stale)} block(s)")
    missing = unshown(blocks, root)
    for record in missing:
        print(f"{record}: no page shows it (add `<!-- output of: ... {record} -->` where its prose is)")
    print(f"{len(blocks)} block(s) on {len(pages_of(root))} page(s); {len(stale)} differed; {len(missing)} unshown")
    return 1 if missing or (stale and args.check) else 0


if __name__ == "__main__":
    sys.exit(main())
