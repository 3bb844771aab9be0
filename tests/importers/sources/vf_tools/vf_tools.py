"""A tool verifiers env: an add tool, the reply after the tool result is checked."""

import verifiers as vf
from datasets import Dataset


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def correct(completion, answer, **kwargs):
    return 1.0 if completion[-1]["content"].strip() == answer else 0.0


def load_environment(**kwargs):
    rows = [{"question": "What is 17 + 25? Use the tool.", "answer": "42"}]
    return vf.ToolEnv(dataset=Dataset.from_list(rows), tools=[add], rubric=vf.Rubric(funcs=[correct]), max_turns=4)
