"""The echo environment honours the environment contract (``openenv.core.testing``)."""

from openenv.core.testing import EnvContractTests
from openenv.envs.echo import EchoAction, EchoEnvironment


class TestEchoContract(EnvContractTests):
    env_factory = EchoEnvironment
    actions = [EchoAction(message="hello"), EchoAction(message="")]
