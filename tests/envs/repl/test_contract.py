"""The shared environment contract (``openenv.core.testing``) applied to the REPL env."""

from __future__ import annotations

from openenv.core.testing import EnvContractTests
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.models import REPLAction
from tests.envs.repl.conftest import test_limits


def make_repl() -> REPLEnvironment:
    """A REPL env with test limits."""
    return REPLEnvironment(limits=test_limits(), llm=None, max_iterations=5)


class TestREPLContract(EnvContractTests):
    env_factory = make_repl
    actions = (REPLAction(code="x = 1"), REPLAction(code="x += 1\nprint(x)"), REPLAction(code="FINAL(x)"))
    deterministic_steps = False  # observations carry execution times
