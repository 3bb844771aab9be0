"""A stateful tool verifiers env: each episode's notebook lives in its rollout state."""

import verifiers as vf
from datasets import Dataset


def note(text: str, notebook: list) -> str:
    """Write a line in the notebook.

    Args:
        text: The line to write.
    """
    notebook.append(text)
    return f"{len(notebook)} note(s)"


def two_notes(state, **kwargs):
    return 1.0 if len(state["notebook"]) == 2 else 0.0


class NotebookEnv(vf.StatefulToolEnv):
    def __init__(self, **kwargs):
        super().__init__(tools=[], **kwargs)
        self.add_tool(note, args_to_skip=["notebook"])

    async def setup_state(self, state, **kwargs):
        state["notebook"] = []
        return await super().setup_state(state, **kwargs)

    def update_tool_args(self, tool_name, tool_args, messages, state, **kwargs):
        return dict(tool_args, notebook=state["notebook"])


def load_environment(**kwargs):
    rows = [{"question": "Write exactly two notes, then say done.", "answer": ""}]
    return NotebookEnv(dataset=Dataset.from_list(rows), rubric=vf.Rubric(funcs=[two_notes]), max_turns=6)
