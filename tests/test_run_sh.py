"""run.sh's start-up (issue 33: start-up within 2 s): pip runs only when requirements.txt changed since the last
install into the virtualenv (it checked every pin on each ``bash run.sh app``, 3.5 s quiet, 14 s loaded, with nothing to install)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT


def _fake_tree(tmp_path: Path) -> Path:
    """run.sh and requirements.txt beside a virtualenv whose python only writes down how it was called."""
    shutil.copy(ROOT / "run.sh", tmp_path / "run.sh")
    shutil.copy(ROOT / "requirements.txt", tmp_path / "requirements.txt")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> {tmp_path / "calls.log"}\n', encoding="utf-8")
    python.chmod(0o755)
    return tmp_path


def _pip_calls(tree: Path, **env: str) -> int:
    subprocess.run(["bash", "run.sh", "install"], cwd=tree, env={"PATH": "/usr/bin:/bin", **env}, check=True)
    log = tree / "calls.log"
    return sum("pip install" in line for line in log.read_text().splitlines()) if log.exists() else 0


def test_pip_runs_only_when_the_requirements_changed(tmp_path: Path) -> None:
    tree = _fake_tree(tmp_path)
    assert _pip_calls(tree) == 1  # a new virtualenv: installed
    assert _pip_calls(tree) == 1  # the same requirements: pip not run
    with (tree / "requirements.txt").open("a", encoding="utf-8") as out:
        out.write("# a changed pin\n")
    assert _pip_calls(tree) == 2
    assert _pip_calls(tree) == 2
    assert _pip_calls(tree, RUNLENS_REINSTALL="1") == 3  # asked for


def test_a_failed_install_is_tried_again(tmp_path: Path) -> None:
    tree = _fake_tree(tmp_path)
    python = tree / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\necho "$*" >> {tree / "calls.log"}\nexit 1\n', encoding="utf-8")
    done = subprocess.run(["bash", "run.sh", "install"], cwd=tree, env={"PATH": "/usr/bin:/bin"}, check=False)
    assert done.returncode != 0 and not (tree / ".venv" / ".runlens-requirements").exists()
