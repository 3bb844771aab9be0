"""One default episode store: what the studio, ``openenv rollout`` and library code record
without naming a store, ``openenv episodes`` lists (it once read ``~/.openenv`` while the others
wrote the studio's database)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from openenv.core import GenericEnvClient
from openenv.recording import EpisodeStore, default_store_target, record

VARS = ("OPENENV_EPISODES_DB", "OPENENV_STUDIO_DATABASE", "OPENENV_STUDIO_DATA_DIR", "XDG_DATA_HOME")


@pytest.fixture()
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    return tmp_path


def _listed() -> list[str]:
    result = CliRunner().invoke(cli, ["episodes", "list", "--json"])
    assert result.exit_code == 0, result.output
    return [json.loads(line)["id"] for line in result.output.splitlines()]


def test_recorded_without_a_store_name_is_listed_by_openenv_episodes(clean_env: Path, echo_url: str) -> None:
    from openenv.cli.rollout import default_db
    from webui.studio.settings import load_settings

    expected = str(clean_env / "xdg" / "openenv-studio" / "episodes.db")
    assert default_store_target() == default_db() == load_settings(environ={}).database_target == expected
    with EpisodeStore(load_settings(environ={}).database_target) as store:  # where the studio's Play records
        with record(GenericEnvClient(base_url=echo_url).sync(), store=store) as env:
            env.reset()
            env.step({"message": "seen everywhere"})
            eid = env.episode_id
    assert _listed() == [eid]


@pytest.mark.parametrize("name", ["OPENENV_EPISODES_DB", "OPENENV_STUDIO_DATABASE"])
def test_a_named_store_is_used_by_all(clean_env: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    from openenv.cli.rollout import default_db
    from webui.studio.settings import load_settings

    target = str(clean_env / f"{name}.db")
    monkeypatch.setenv(name, target)
    assert default_store_target() == default_db() == load_settings().database_target == target


def test_the_studio_data_dir_setting_moves_the_default(clean_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from webui.studio.settings import load_settings

    monkeypatch.setenv("OPENENV_STUDIO_DATA_DIR", str(clean_env / "data"))
    assert default_store_target() == load_settings().database_target == str(clean_env / "data" / "episodes.db")
