"""The REPL environment honours the environment contract (``openenv.core.testing``)."""

from openenv.core.testing import EnvContractTests
from openenv.envs.repl.environment import REPLEnvironment
from openenv.envs.repl.models import REPLAction
from tests.envs.repl.conftest import test_limits


class TestREPLContract(EnvContractTests):
    actions = [REPLAction(code="x = 1"), REPLAction(code="print(x)")]
    deterministic_steps = False  # each cell reports its own execution time

    def make_env(self) -> REPLEnvironment:
        # Warm workers belong to the process, not to one env: they rightly outlive a closed env.
        return REPLEnvironment(limits=test_limits(warm_workers=0), llm=None)
