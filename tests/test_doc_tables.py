"""The docs' tables made from committed records (``benchmarks/doc_tables/run.py``): each block a page
holds is what its command prints from the record, and every committed record is shown somewhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.doc_tables.reporters import committed_records, output_of  # noqa: E402
from benchmarks.doc_tables.run import blocks_of, main, pages_of, unshown  # noqa: E402

PLATT = "benchmarks/calibration/platt-targets-2026-11-28.json"
SCALE = "benchmarks/scale/check-2026-11-27.json"


def test_every_table_the_docs_show_is_what_its_committed_record_makes():
    blocks = [block for page in pages_of(ROOT) for block in blocks_of(page, ROOT)]
    stale = [f"{block.page.name}: {block.command}" for block in blocks if block.held != block.made]
    assert not stale, "run `python benchmarks/doc_tables/run.py` and commit the pages: " + "; ".join(stale)
    assert committed_records(ROOT) and not unshown(blocks, ROOT)
    kinds = {block.command.split(" --report")[0].split(" study report")[0] for block in blocks}
    assert len(kinds) == 6, kinds  # the study tables, parity, uncertainty, Platt's targets, scale, two jobs at once


def test_the_commands_print_what_the_script_makes_of_them_in_its_process():
    """A block is the command's own output: ``ddpx`` and a script run by its path print what the
    script writes."""
    for command in (
        "ddpx study report benchmarks/studies/pretraining.json",
        f"python benchmarks/scale/run.py --report {SCALE}",
    ):
        words = command.split()
        program = [sys.executable, "-m", "ddpx"] if words[0] == "ddpx" else [sys.executable]
        done = subprocess.run([*program, *words[1:]], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout == output_of(command, ROOT), command


def a_tree(tmp_path: Path, records: list[str], page: str) -> Path:
    for record in records:
        (tmp_path / record).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / record, tmp_path / record)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "page.md").write_text(page, encoding="utf-8")
    return tmp_path


def test_a_stale_block_is_named_and_rewritten_and_a_record_no_page_shows_is_named(tmp_path, capsys):
    stale = f"Before.\n\n<!-- output of: python benchmarks/calibration/run.py --report {PLATT} -->\n| old |\n<!-- end of output -->\n\nAfter.\n"
    root = a_tree(tmp_path, [PLATT, SCALE], stale)
    page = root / "docs" / "page.md"
    assert main(["--check"], root=root) == 1 and page.read_text() == stale  # --check writes nothing
    said = capsys.readouterr().out
    assert f"page.md: `python benchmarks/calibration/run.py --report {PLATT}` prints otherwise" in said
    assert f"{SCALE}: no page shows it" in said
    assert main([], root=root) == 1  # rewritten; still a record unshown
    made = output_of(f"python benchmarks/calibration/run.py --report {PLATT}", ROOT)
    assert page.read_text() == stale.replace("| old |\n", made) and "| bbbp | bbbp_ffn |" in made
    (root / SCALE).unlink()
    assert main(["--check"], root=root) == 0
    assert "1 block(s) on 1 page(s); 0 differed; 0 unshown" in capsys.readouterr().out


def test_a_block_of_a_command_it_cannot_make_is_refused_with_the_ones_it_can(tmp_path):
    root = a_tree(tmp_path, [], "<!-- output of: python benchmarks/peers/run.py --dry -->\nx\n<!-- end of output -->\n")
    with pytest.raises(SystemExit, match=r"not a report command this script can make \(it knows: ddpx study report;"):
        main(["--check"], root=root)
