"""The public import paths are fixed; every exported name exists and is not None."""

from __future__ import annotations

import importlib

import pytest

MODULES = ["openenv", "openenv.core", "openenv.core.env_server", "openenv.core.errors", "openenv.envs.echo"]


@pytest.mark.parametrize("name", MODULES)
def test_all_is_sorted_and_real(name):
    module = importlib.import_module(name)
    exported = module.__all__
    assert exported == sorted(exported)
    for attr in exported:
        assert getattr(module, attr) is not None, attr


def test_seed_import_paths():
    from openenv.core import EnvClient, StepResult  # noqa: F401
    from openenv.core.env_server import Environment, HTTPEnvServer, create_app  # noqa: F401


def test_every_error_is_a_runtime_error_with_a_code():
    from openenv.core import errors

    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, RuntimeError)
            assert obj.code


def test_the_published_top_level_names_load_on_first_use():
    import subprocess
    import sys

    code = (
        "import sys, openenv; assert 'openenv.core' not in sys.modules;"
        "from openenv import AutoAction, AutoEnv, GenericAction, GenericEnvClient, SyncEnvClient;"
        "assert AutoEnv.from_env and GenericAction(a=1) == {'a': 1};"
        "assert 'fastapi' not in sys.modules, 'a client import pulled in the server'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
