"""A git environment written the way the catalogue's ``git_env`` is (its import lines, names and
wire shapes, our own code): agents clone repositories of a shared Gitea and run git commands."""

from .client import GitEnv
from .env_types import GitAction, GitObservation, GitState

__all__ = ["GitEnv", "GitAction", "GitObservation", "GitState"]
