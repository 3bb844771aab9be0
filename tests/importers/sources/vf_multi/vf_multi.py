"""A multi-turn verifiers env: guess the number, the env answers higher/lower until it is found."""

import verifiers as vf
from datasets import Dataset


class GuessEnv(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        guess = messages[-1]["content"].strip()
        target = state["answer"]
        if guess == target:
            state["final_env_response"] = [vf.UserMessage(content="correct")]
            return state["final_env_response"]
        hint = "higher" if guess.isdigit() and int(guess) < int(target) else "lower"
        return [vf.UserMessage(content=hint)]


def found(completion, answer, **kwargs):
    return 1.0 if any(m["role"] == "assistant" and m["content"].strip() == answer for m in completion) else 0.0


def load_environment(**kwargs):
    rows = [{"question": "Guess my number (1-9).", "answer": str(n)} for n in (3, 7)]
    return GuessEnv(dataset=Dataset.from_list(rows), rubric=vf.Rubric(funcs=[found]), max_turns=5)
