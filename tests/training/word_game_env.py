"""A tiny word game served by ours or by the published 0.10 (``tests/peer010.py``): guess the
secret word (a reset argument); a guess scores the share of letters in the right place and the
episode ends when the word is found or after ``MAX_TRIES`` guesses."""

from typing import Any

from openenv.core.env_server import create_fastapi_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State

MAX_TRIES = 4


class GuessAction(Action):
    guess: str


class GuessObservation(Observation):
    feedback: str = ""
    tries: int = 0


class GuessState(State):
    secret: str = "crane"
    tries: int = 0


class WordGame(Environment[GuessAction, GuessObservation, GuessState]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = GuessState()

    def reset(self, seed: int | None = None, episode_id: str | None = None, secret: str = "crane",
              **kwargs: Any) -> GuessObservation:  # fmt: skip
        self._state = GuessState(episode_id=episode_id, secret=secret)
        return GuessObservation(feedback=f"guess a {len(secret)}-letter word", reward=0.0)

    def step(self, action: GuessAction, timeout_s: float | None = None, **kwargs: Any) -> GuessObservation:
        s = self._state
        s.tries += 1
        s.step_count += 1
        guess = action.guess.strip().lower()
        marks = "".join(g.upper() if g == c else ("?" if g in s.secret else ".") for g, c in zip(guess, s.secret, strict=False))
        right = sum(g == c for g, c in zip(guess, s.secret, strict=False)) / len(s.secret)
        done = guess == s.secret or s.tries >= MAX_TRIES
        return GuessObservation(feedback=marks, tries=s.tries, reward=round(right, 6), done=done)

    @property
    def state(self) -> GuessState:
        return self._state


app = create_fastapi_app(WordGame, GuessAction, GuessObservation, max_concurrent_envs=16, env_name="word_game",
                         state_cls=GuessState)
