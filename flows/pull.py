"""The pull step of infra/prefect-git.yaml: Prefect's `git_clone`, pinned to one commit.

Prefect fills `{{ $VARIABLE }}` from the worker's environment and leaves an unset one blank, and
`git_clone` with a blank `commit_sha` clones the default branch's newest commit: whatever was
pushed last would run. `pinned_git_clone` refuses, in one line, anything but a full commit hash, so
a deployment runs the commit it names or nothing. A tag is given as its commit
(`git rev-parse v0.1.0^{commit}`): a tag, like a branch, can be moved.
"""

from __future__ import annotations

import re

from prefect.deployments.steps import git_clone

FULL_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # SHA-1 or SHA-256 object names


class UnpinnedCloneError(ValueError):
    """The pull step was not given one full commit hash."""


def pinned_git_clone(repository: str, commit: str = "", access_token: str | None = None) -> dict[str, str]:
    """Clone `repository` and check out `commit` (a full hash); Prefect's output: {"directory": the clone}."""
    if not FULL_COMMIT.fullmatch(commit.strip().lower()):
        raise UnpinnedCloneError(f"the git pull step needs the full hash of the commit to run (VASE_GIT_COMMIT), "
                                 f"not {commit!r}: without one it would run whatever was pushed last")
    return git_clone(repository, commit_sha=commit.strip().lower(), access_token=access_token)
