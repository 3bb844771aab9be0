"""REPL environment types, field-compatible with the published REPL env (plus additive fields)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from openenv.core.env_server.types import Action, Observation, State

__all__ = ["CODE", "MULTILINE", "CodeBlockResult", "REPLAction", "REPLObservation", "REPLState"]

CODE = {"format": "code", "contentMediaType": "text/x-python"}
MULTILINE = {"format": "multiline"}
Outcome = Literal["ok", "error", "timeout", "memory", "worker_died"]
Termination = Literal["final", "max_iterations"]


class REPLAction(Action):
    """Python code to run in the session's namespace, or a final answer."""

    code: str = Field(default="", description="Python code to execute", json_schema_extra=CODE)
    is_final: bool = Field(default=False, description="Whether this action submits the final answer")
    final_answer: str | None = Field(default=None, description="The final answer when is_final is true",
                                     json_schema_extra=MULTILINE)


class CodeBlockResult(BaseModel):
    """What one cell did."""

    stdout: str = Field(default="", description="Standard output (capped; see stdout_chars)",
                        json_schema_extra=MULTILINE)
    stderr: str = Field(default="", description="Standard error (capped; see stderr_chars)",
                        json_schema_extra=MULTILINE)
    locals_snapshot: dict[str, str] = Field(
        default_factory=dict, description="Short reprs of variables the cell created or changed"
    )
    execution_time: float = Field(default=0.0, ge=0, description="Seconds the cell ran")
    success: bool = Field(default=True, description="Whether the cell ran to completion without raising")
    exception: str | None = Field(default=None, description="'Type: message' of the cell's exception, if any")
    stdout_chars: int = Field(default=0, ge=0, description="Characters the cell wrote to stdout, before capping")
    stderr_chars: int = Field(default=0, ge=0, description="Characters the cell wrote to stderr, before capping")


class REPLObservation(Observation):
    """The result of a cell plus the episode's progress."""

    result: CodeBlockResult = Field(default_factory=CodeBlockResult, description="Result of the cell")
    context_preview: str | None = Field(default=None, description="First characters of the context")
    context_length: int = Field(default=0, ge=0, description="Length of the context in characters")
    available_variables: list[str] = Field(default_factory=list, description="Variables in the namespace")
    iteration: int = Field(default=0, ge=0, description="Cells executed so far in this episode")
    max_iterations: int = Field(default=30, ge=1, description="Cells allowed in this episode")
    outcome: Outcome = Field(default="ok", description="Why the step ended: ok, error, timeout, memory, worker_died")
    namespace_lost: bool = Field(
        default=False, description="The worker had to be restarted: variables defined so far are gone"
    )
    final_answer: str | None = Field(default=None, description="The final answer, once one was given")
    termination: Termination | None = Field(default=None, description="Why the episode ended, when done")


class REPLState(State):
    """Episode state of the REPL environment."""

    context: str | None = Field(default=None, description="The episode's context")
    task_prompt: str | None = Field(default=None, description="The task description")
    iteration: int = Field(default=0, ge=0, description="Cells executed so far")
    max_iterations: int = Field(default=30, ge=1, description="Cells allowed in this episode")
    namespace_keys: list[str] = Field(default_factory=list, description="Variables currently in the namespace")
    final_answer: str | None = Field(default=None, description="The final answer, once one was given")
    total_execution_time: float = Field(default=0.0, ge=0, description="Seconds spent running cells")
