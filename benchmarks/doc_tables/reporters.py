"""The commands whose output the docs show, each made in this process by the code the command runs.

A reporter is a command's first words (what a block's marker names before the record paths) and
the function that command's entry point is: it takes the rest of the command line and prints. The
globs say which committed records are of its kind, so that one left out of every page is named.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


def _script(module: str) -> Callable[[list[str]], None]:
    """A benchmark script's ``main(argv)``, imported when first asked for."""
    return lambda argv: importlib.import_module(module).main(argv)


def _ddpx(argv: list[str]) -> None:
    """``ddpx`` with these arguments, through the same click group the ``ddpx`` executable runs."""
    from ddpx.cli import cli

    cli.main(args=argv, prog_name="ddpx", standalone_mode=False)


@dataclass(frozen=True)
class Reporter:
    program: str  # how the command starts: ``ddpx`` or ``python <script>``
    main: Callable[[list[str]], None]  # its entry point, given the words after ``program``
    report: str  # the words after ``program`` that ask for a report of the records that follow
    records: tuple[str, ...]  # globs, from the repository root, of the committed records of its kind

    @property
    def command(self) -> str:
        return f"{self.program} {self.report}"


def _script_reporter(script: str, records: tuple[str, ...]) -> Reporter:
    module = script.removesuffix(".py").replace("/", ".")
    return Reporter(f"python {script}", _script(module), "--report", records)


REPORTERS = (
    Reporter("ddpx", _ddpx, "study report", ("benchmarks/studies/*.json",)),
    _script_reporter("benchmarks/vs_chemprop/run.py", ("benchmarks/vs_chemprop/parity-*.json",)),
    _script_reporter("benchmarks/vs_chemprop/uncertainty.py", ("benchmarks/vs_chemprop/uncertainty-*.json",)),
    _script_reporter("benchmarks/calibration/run.py", ("benchmarks/calibration/*.json",)),
    _script_reporter("benchmarks/scale/run.py", ("benchmarks/scale/scale-*.json", "benchmarks/scale/check-*.json")),
    _script_reporter("benchmarks/side_by_side/run.py", ("benchmarks/side_by_side/*.json",)),
)


def reporter_of(command: str) -> tuple[Reporter, list[str]]:
    """The reporter a command line names and the words its program is given; a SystemExit naming
    the commands there are where it names none of them."""
    words = shlex.split(command)
    for reporter in REPORTERS:
        if words[: len(shlex.split(reporter.command))] == shlex.split(reporter.command):
            return reporter, words[len(shlex.split(reporter.program)) :]
    known = "; ".join(reporter.command for reporter in REPORTERS)
    raise SystemExit(f"`{command}`: not a report command this script can make (it knows: {known})")


def output_of(command: str, root: Path) -> str:
    """What ``command``, run from ``root``, prints on its standard output."""
    reporter, argv = reporter_of(command)
    printed = io.StringIO()
    with contextlib.chdir(root), contextlib.redirect_stdout(printed):
        reporter.main(argv)
    return printed.getvalue()


def committed_records(root: Path) -> list[str]:
    """Every committed record of the reporters' kinds, as paths from ``root``."""
    found = {path for reporter in REPORTERS for glob in reporter.records for path in root.glob(glob)}
    return sorted(str(path.relative_to(root)) for path in found)
