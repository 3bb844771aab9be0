"""A single-turn verifiers env: doubling questions, a rubric of two functions (exact 1.0, short 0.5)."""

import verifiers as vf
from datasets import Dataset


def exact(completion, answer, **kwargs):
    return 1.0 if completion[-1]["content"].strip() == answer else 0.0


def short(completion, **kwargs):
    return 1.0 if len(completion[-1]["content"]) <= 3 else 0.0


def load_environment(n: int = 3, **kwargs):
    rows = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(n)]
    rubric = vf.Rubric(funcs=[exact, short], weights=[1.0, 0.5])
    return vf.SingleTurnEnv(dataset=Dataset.from_list(rows), rubric=rubric)
