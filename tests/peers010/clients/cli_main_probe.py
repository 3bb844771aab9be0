"""Print what 0.10's ``openenv.cli.__main__`` surface does: ``main()`` exit codes and the Auto* messages."""

from __future__ import annotations

import contextlib
import io
from unittest import mock

import openenv.cli.__main__ as cli_main
from openenv.auto import AutoAction, AutoEnv


def exit_code(error: BaseException) -> object:
    with mock.patch.object(cli_main, "app", side_effect=error), contextlib.redirect_stdout(io.StringIO()), \
            contextlib.redirect_stderr(io.StringIO()) as err:
        try:
            cli_main.main()
        except SystemExit as stop:
            return stop.code, err.getvalue().strip()
    return None


print("interrupt", exit_code(KeyboardInterrupt()))
print("error", exit_code(ValueError("Test error")))
for factory in (AutoEnv, AutoAction):
    try:
        factory()
    except TypeError as exc:
        print(factory.__name__, exc)
