"""The pull step of infra/prefect-git.yaml, run as a Prefect worker runs it (Prefect's `run_steps`,
the variables from the environment) against a local bare repository of two commits: it checks out
the commit named by VASE_GIT_COMMIT, not the newest one pushed, and without a full hash it refuses
in one line instead of cloning the newest."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import yaml

from infra.credentials import INFRA
from tests.infra.processes import git

pytestmark = pytest.mark.slow  # Prefect's steps start a temporary Prefect server


@pytest.fixture
def repository(tmp_path) -> tuple[str, str, str]:
    """file:// URL of a bare repository whose main has two commits: (URL, the first commit, the second)."""
    work = tmp_path / "work"
    work.mkdir()
    git("init", "--quiet", "--initial-branch", "main", cwd=work)
    commits = []
    for version in ("pinned", "pushed later"):
        (work / "VERSION").write_text(version)
        git("add", "VERSION", cwd=work)
        git("commit", "--quiet", "-m", version, cwd=work)
        commits.append(git("rev-parse", "HEAD", cwd=work))
    git("clone", "--quiet", "--bare", str(work), str(tmp_path / "vase.git"), cwd=tmp_path)
    return f"file://{tmp_path / 'vase.git'}", *commits


def pull(folder: Path, monkeypatch, **environment: str) -> dict:
    """infra/prefect-git.yaml's pull steps, run in `folder` with `environment` as the worker's."""
    from prefect.deployments.steps.core import run_steps

    for name in ("VASE_GIT_REPOSITORY", "VASE_GIT_COMMIT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    folder.mkdir()
    monkeypatch.chdir(folder)
    steps = yaml.safe_load((INFRA / "prefect-git.yaml").read_text())["pull"]
    return asyncio.run(run_steps(steps))


def test_the_pull_step_checks_out_the_pinned_commit_not_the_newest(repository, tmp_path, monkeypatch):
    url, pinned, newest = repository
    output = pull(tmp_path / "run", monkeypatch, VASE_GIT_REPOSITORY=url, VASE_GIT_COMMIT=pinned)
    clone = Path(output["directory"])
    assert git("rev-parse", "HEAD", cwd=clone) == pinned != newest
    assert (clone / "VERSION").read_text() == "pinned"


@pytest.mark.parametrize("commit", [None, "", "main", "HEAD", "0123abc"])
def test_the_pull_step_without_a_full_commit_hash_refuses_in_one_line(repository, tmp_path, monkeypatch, commit):
    url, _, _ = repository
    environment = {"VASE_GIT_REPOSITORY": url} | ({} if commit is None else {"VASE_GIT_COMMIT": commit})
    from flows.pull import UnpinnedCloneError

    with pytest.raises(Exception) as refused:  # Prefect's StepExecutionError, caused by the step's error
        pull(tmp_path / "run", monkeypatch, **environment)
    cause = refused.value.__cause__
    assert isinstance(cause, UnpinnedCloneError) and "needs the full hash of the commit to run (VASE_GIT_COMMIT)" in str(cause)
    assert "\n" not in str(cause)
    assert not any((tmp_path / "run").iterdir())  # nothing cloned
