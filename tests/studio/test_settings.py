"""Settings: one table, environment variables, validation, and every setting documented."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openenv.cli.main import cli
from webui.studio import SETTINGS, load_settings
from webui.studio.errors import SettingsError
from webui.studio.settings import default_data_dir

DOCS = Path(__file__).resolve().parents[2] / "docs" / "studio.md"


def test_defaults_are_loopback_and_per_user_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", "/tmp/xdg-test")
    s = load_settings(environ={})
    assert (s.host, s.port, s.token) == ("127.0.0.1", 8000, None)
    assert s.data_dir == Path("/tmp/xdg-test/openenv-studio") == default_data_dir()
    assert s.database_target == "/tmp/xdg-test/openenv-studio/episodes.db"


def test_home_fallback_without_xdg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    assert default_data_dir() == Path.home() / ".local" / "share" / "openenv-studio"


def test_environment_then_overrides() -> None:
    env = {"OPENENV_STUDIO_PORT": "9001", "OPENENV_STUDIO_DOCKER": "false", "OPENENV_STUDIO_PAGE_SIZE": "7"}
    s = load_settings({"page_size": 9, "port": None}, environ=env)
    assert (s.port, s.docker, s.page_size) == (9001, False, 9)


@pytest.mark.parametrize(
    ("values", "env", "setting"),
    [
        ({"host": "0.0.0.0"}, {}, "token"),
        ({"host": "10.1.2.3", "token": "short"}, {}, "token"),
        ({"port": 70000}, {}, "port"),
        ({}, {"OPENENV_STUDIO_PORT": "eighty"}, "port"),
        ({}, {"OPENENV_STUDIO_DOCKER": "maybe"}, "docker"),
        ({"page_size": 0}, {}, "page_size"),
        ({"launch_timeout_s": -1.0}, {}, "launch_timeout_s"),
        ({"colour": "blue"}, {}, "colour"),
    ],
)
def test_invalid_settings_are_refused(values: dict, env: dict, setting: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings(values, environ=env)
    assert info.value.details["setting"] == setting


def test_non_loopback_with_token_is_allowed() -> None:
    s = load_settings({"host": "0.0.0.0", "token": "s3cret-token"}, environ={})
    assert s.token == "s3cret-token"


def test_every_setting_is_documented() -> None:
    text = DOCS.read_text()
    for s in SETTINGS:
        assert f"`{s.name}`" in text, f"{s.name} missing from docs/studio.md"
        assert f"OPENENV_STUDIO_{s.name.upper()}" in text


def test_cli_refuses_remote_bind_without_token(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["studio", "--host", "0.0.0.0", "--data-dir", str(tmp_path)])
    assert result.exit_code == 2
    assert "without a token" in result.output


def test_cli_help_lists_options() -> None:
    result = CliRunner().invoke(cli, ["studio", "--help"])
    assert result.exit_code == 0
    for option in ("--host", "--port", "--data-dir", "--token"):
        assert option in result.output
