"""``openenv collect``: rollouts from a deployed environment into ``results.jsonl`` + ``metadata.json``.

0.10's command, with its arguments and output (resumable: episode ids already in ``results.jsonl``
are skipped unless ``--no-resume``). Beyond 0.10, every played episode is also recorded in the
episode store (``--db``, else ``$OPENENV_EPISODES_DB``, else the studio's), with each tool call as
a step and each model call as its model turn, so the studio shows the collection as it runs;
``--capture tokens`` asks an ``--llm-endpoint`` engine for its token ids and logprobs, which land in
both the rows' token lists and the recorded turns. ``--no-record`` turns the store off.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

__all__ = ["collect"]

_KEY_ENVS = {"openai": ["OPENAI_API_KEY", "API_KEY"], "anthropic": ["ANTHROPIC_API_KEY", "API_KEY"]}
_SYSTEM_PROMPT = """You are playing a game through a tool-calling interface.
For each turn, inspect the observation and call the provided tool with a
valid argument. Only call one tool per turn."""


def _api_key(provider: str) -> str:
    for name in _KEY_ENVS.get(provider, []):
        if os.getenv(name):
            return os.environ[name]
    raise click.BadParameter(f"No API key found for provider={provider!r}. Set one of: {_KEY_ENVS.get(provider, [])}",
                             param_hint="--provider")  # fmt: skip


def _llm_model_step(provider: str, model: str, *, llm_endpoint: str | None, llm_port: int | None, temperature: float,
                    max_tokens: int, system_prompt: str | None, capture: str | None) -> Any:  # fmt: skip
    from openenv.core.harness.collect import build_model_step
    from openenv.core.llm_client import OpenAIClient, create_llm_client

    prompt = system_prompt or _SYSTEM_PROMPT
    if not llm_endpoint:
        if capture:
            raise click.BadParameter("--capture needs --llm-endpoint (an engine that returns token ids)",
                                     param_hint="--capture")  # fmt: skip
        client = create_llm_client(provider=provider, model=model, api_key=_api_key(provider), system_prompt=prompt,
                                   temperature=temperature, max_tokens=max_tokens)  # fmt: skip
        return build_model_step(client, system_prompt=prompt)
    try:
        client = OpenAIClient(endpoint=llm_endpoint, port=llm_port, model=model,
                              api_key=os.getenv("OPENAI_API_KEY") or "not-needed", system_prompt=prompt,
                              temperature=temperature, max_tokens=max_tokens)  # fmt: skip
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--llm-endpoint") from None
    click.echo(f"LLM endpoint: {client.base_url}")
    if capture:
        from .collect_envs import chat_model_step

        return chat_model_step(client.api_url, model, api_key=os.getenv("OPENAI_API_KEY"), temperature=temperature,
                               max_tokens=max_tokens, system_prompt=prompt, capture=capture)  # fmt: skip
    return build_model_step(client, system_prompt=prompt)


def _open_store(db: str | None) -> Any:
    from openenv.core.errors import OpenEnvError
    from openenv.recording import EpisodeStore, default_store_target

    try:
        return EpisodeStore(db or default_store_target())
    except OpenEnvError as exc:
        raise click.ClickException(f"{exc} [{exc.code}]") from None


@click.command()
@click.argument("env")
@click.option("--base-url", required=True, help="Env server URL (local Docker or Hugging Face Space).")
@click.option("--output-dir", "-o", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Directory to write results.jsonl + metadata.json.")
@click.option("--num-episodes", "-n", default=10, show_default=True, type=int, help="Number of episodes to collect.")
@click.option("--max-turns", default=9, show_default=True, type=int, help="Max tool/model turns per episode.")
@click.option("--episode-id-prefix", default="ep", show_default=True, help="Prefix for serialized episode ids.")
@click.option("--resume/--no-resume", default=True, show_default=True, help="Skip episodes already in results.jsonl.")
@click.option("--provider", default="scripted", show_default=True, help="Teacher provider: scripted | openai | anthropic.")
@click.option("--model", default=None, help="Model id (required when provider != scripted).")
@click.option("--llm-endpoint", default=None,
              help="Base URL of a self-hosted OpenAI-compatible server (vLLM/TGI/Ollama); /v1 is added when it has no path.")
@click.option("--llm-port", default=None, type=int, help="Port added to --llm-endpoint when its URL names none.")
@click.option("--temperature", default=0.2, show_default=True, type=float, help="Sampling temperature.")
@click.option("--max-tokens", default=200, show_default=True, type=int, help="Max completion tokens.")
@click.option("--keep-losses", is_flag=True, help="Keep losing rollouts (default: drop rollouts with reward < 0).")
@click.option("--push-to-hub", "-H", default=None, help="Destination dataset repo id ('user/name').")
@click.option("--private", is_flag=True, help="Create the Hub dataset repo as private.")
@click.option("--commit-message", default=None, help="Commit message for the Hub upload.")
@click.option("--dataset-config", default=None, help="JSON dataset config for envs that take one (reasoning_gym).")
@click.option("--system-prompt", default=None, help="Custom system prompt for the teacher model.")
@click.option("--capture", type=click.Choice(["tokens", "logprobs"]), default=None,
              help="Ask the --llm-endpoint engine for token ids/logprobs (recorded as capture turns).")
@click.option("--db", default=None, help="Episode store: SQLite path or postgresql:// URL (default: the studio's).")
@click.option("--label", default=None, help="Label of the recorded episodes (default collect-<output dir name>).")
@click.option("--no-record", is_flag=True, help="Do not record the episodes in the episode store.")
def collect(env: str, base_url: str, output_dir: Path, num_episodes: int, max_turns: int, episode_id_prefix: str,
            resume: bool, provider: str, model: str | None, llm_endpoint: str | None, llm_port: int | None,
            temperature: float, max_tokens: int, keep_losses: bool, push_to_hub: str | None, private: bool,
            commit_message: str | None, dataset_config: str | None, system_prompt: str | None, capture: str | None,
            db: str | None, label: str | None, no_record: bool) -> None:  # fmt: skip
    """Collect rollouts from a deployed OpenEnv environment (ENV: family:variant, e.g. openspiel:tic_tac_toe)."""
    from openenv.core.harness import HarnessRunLimits, MCPHarnessAdapter
    from openenv.core.harness.collect import CollectRunner, RolloutSerializer, push_to_hf_hub

    from .collect_envs import build_session_factory, scripted_model_step

    uses_llm = llm_endpoint is not None or provider != "scripted"
    teacher = "openai-compatible" if llm_endpoint is not None else provider
    if uses_llm and not model:
        raise click.BadParameter("--model is required when using a hosted provider or --llm-endpoint.",
                                 param_hint="--model")  # fmt: skip
    config = None
    if dataset_config is not None:
        try:
            config = json.loads(dataset_config)
        except json.JSONDecodeError as exc:
            raise click.BadParameter(f"--dataset-config must be valid JSON: {exc}", param_hint="--dataset-config") from None
    factory = build_session_factory(env, base_url, dataset_config=config)
    if uses_llm:
        step = _llm_model_step(provider, model or "", llm_endpoint=llm_endpoint, llm_port=llm_port,
                               temperature=temperature, max_tokens=max_tokens, system_prompt=system_prompt,
                               capture=capture)  # fmt: skip
    else:
        step = scripted_model_step()
    teacher_step = step
    serializer = RolloutSerializer(output_dir)
    serializer.write_metadata({
        "env": env, "env_base_url": base_url, "provider": teacher, "model": model, "llm_endpoint": llm_endpoint,
        "llm_port": llm_port if llm_endpoint else None, "num_episodes_requested": num_episodes,
        "temperature": temperature, "keep_losses": keep_losses,
    })  # fmt: skip
    store = recorder = None
    if not no_record:
        from openenv.core.harness.collect_store import CollectRecorder

        store = _open_store(db)
        recorder = CollectRecorder(store, env_name=env, base_url=base_url,
                                   label=label or f"collect-{output_dir.resolve().name}",
                                   info={"collect": {"output_dir": str(output_dir.resolve()), "teacher": teacher,
                                                     "model": model, "max_turns": max_turns}})  # fmt: skip
        factory = recorder.session_factory(factory)
        step = recorder.model_step(step, model=model or teacher)
    runner = CollectRunner(session_factory=factory, harness_adapter=MCPHarnessAdapter(), serializer=serializer,
                           limits=HarnessRunLimits(max_turns=max_turns))  # fmt: skip
    click.echo(f"Env server: {base_url}")
    click.echo(f"Teacher: {teacher}" + (f"/{model}" if model else ""))
    click.echo(f"Output: {output_dir}")
    try:
        result = runner.run(model_step=step, num_episodes=num_episodes, episode_id_prefix=episode_id_prefix,
                            resume=resume, should_keep=None if keep_losses else (lambda r: r.reward >= 0.0))  # fmt: skip
    except ValueError as exc:  # a results.jsonl that is not one (resume reads it first)
        raise click.ClickException(str(exc)) from None
    finally:
        if store is not None:
            store.close()
        if callable(getattr(teacher_step, "close", None)):
            teacher_step.close()
    click.echo(f"Collected={result.num_collected} skipped={result.num_skipped} dropped={result.num_dropped} "
               f"failed={result.num_failed}")  # fmt: skip
    click.echo(f"avg_reward={result.avg_reward:.3f} success_rate={result.success_rate:.0%}")
    if recorder is not None and recorder.run_id is not None:
        click.echo(f"Recorded {len(recorder.episode_ids)} episode(s) in the episode store (run {recorder.run_id}, "
                   f"label {recorder.label}); browse them with `openenv studio` or `openenv episodes`.")  # fmt: skip
    if push_to_hub:
        click.echo(f"Pushing to Hub: {push_to_hub}")
        click.echo(f"Dataset at: {push_to_hf_hub(output_dir=output_dir, repo_id=push_to_hub, private=private, commit_message=commit_message)}")
