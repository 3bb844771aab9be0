"""Play's one state machine: which of idle, stepping, model playing, done or closed a play
session is in, what each allows, and the refusal for a call that is not allowed.

The server holds the truth (``PlaySession.phase``); the page renders it into ``#play-status``
(``data-phase`` and the enabled buttons) after every call and on a short poll, and
``studio.js`` only mirrors it onto the buttons.

    idle ──Step──▶ stepping ──▶ idle | done          idle ──Let the model──▶ model playing ──▶ idle | done
    done ──Reset──▶ stepping ──▶ idle                 any ──Close / DELETE /sessions/{id}──▶ closed
"""

from __future__ import annotations

from dataclasses import dataclass

from webui.studio.errors import StudioError

__all__ = ["CLOSED", "DONE", "IDLE", "MODEL", "PHASES", "STEPPING", "Controls", "PlayRefusedError", "controls", "refusal"]

IDLE, STEPPING, MODEL, DONE, CLOSED = "idle", "stepping", "model playing", "done", "closed"
PHASES = (IDLE, STEPPING, MODEL, DONE, CLOSED)
LOST_CODES = frozenset(("SESSION_ERROR", "EPISODE_LOST"))  # the env server ended our session


class PlayRefusedError(StudioError):
    """A call the session's phase does not allow; ``code`` says which rule refused it."""

    code = "PLAY_REFUSED"
    status = 409


@dataclass(frozen=True)
class Controls:
    """What the page enables in a phase (``started``: an episode has been reset)."""

    step: bool
    reset: bool
    model: bool
    take_back: bool


def controls(phase: str, started: bool) -> Controls:
    """The buttons enabled in ``phase``."""
    return Controls(step=phase == IDLE and started, reset=phase in (IDLE, DONE), model=phase == IDLE and started,
                    take_back=phase == MODEL)  # fmt: skip


def refusal(phase: str, started: bool, what: str, closed_reason: str | None = None) -> PlayRefusedError | None:
    """Why a human ``what`` ("step", "reset" or "model") is refused in ``phase``; ``None`` when allowed."""
    if phase == CLOSED:
        why = closed_reason or "this play session was closed"
        return PlayRefusedError(f"This play session is closed ({why}): nothing more is recorded on it. "
                                "Continue from the last recorded step, or open Play again.", code="SESSION_CLOSED")
    if phase == MODEL:
        return PlayRefusedError(f"The model is playing this session: take back before you {what}.",
                                code="MODEL_PLAYING")
    if what == "reset":
        return None
    if not started:
        return PlayRefusedError("Press Reset first: there is no episode to act in yet, and nothing was recorded.",
                                code="STEP_BEFORE_RESET")
    if phase == DONE:
        return PlayRefusedError("The episode is done: press Reset to start a new one (nothing was recorded).",
                                code="EPISODE_DONE")
    return None
