"""An Open Reward Standard env: answer a capital-city question with the submit tool."""

from openreward.environments import Environment, TextBlock, ToolOutput, tool
from pydantic import BaseModel

TASKS = [{"country": "France", "capital": "Paris"}, {"country": "Japan", "capital": "Tokyo"}]


class Answer(BaseModel):
    city: str


class CapitalQuiz(Environment):
    @classmethod
    def list_splits(cls):
        return ["train"]

    @classmethod
    def list_tasks(cls, split):
        return TASKS

    def get_prompt(self):
        return [TextBlock(text=f"What is the capital of {self.task_spec['country']}?")]

    @tool
    async def submit(self, args: Answer) -> ToolOutput:
        """Submit the city."""
        ok = args.city.strip().lower() == self.task_spec["capital"].lower()
        return ToolOutput(blocks=[TextBlock(text="correct" if ok else "wrong")], reward=1.0 if ok else 0.0,
                          finished=True, metadata={"exact": 1.0 if ok else 0.0})
