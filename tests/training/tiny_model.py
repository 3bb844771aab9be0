"""A tiny causal LM and its tokenizer, built locally for TRL tests (no hub access).

``build_tiny(path, teach=...)`` writes a directory that ``GRPOTrainer(model=str(path))`` and
``AutoTokenizer.from_pretrained(path)`` load offline:

- a byte-level BPE tokenizer trained (``tokenizers``) on a few lines plus the prompts it will
  see, with Qwen3's chat markers as added tokens and TRL's own Qwen3 chat template (so TRL
  recognises it: tool schemas in the prompt, ``<tool_call>`` parsing, its training template);
- a 2-layer Qwen2 model, hidden size 32, randomly initialised from a seed.

A random model never writes a parsable tool call, so an environment would never be stepped.
``teach`` fits the model for 60 full-batch optimiser steps (a few seconds on an idle CPU) so that
after each given prompt it writes one of the given completions, each about equally often: the
rollouts then call the tool, with a reward spread within a GRPO group. Everything is seeded, so
two runs of the same training script sample the same completions.

Needs the ``train`` extra (torch, transformers, tokenizers, trl); import it inside a test after
``tests.training.require_trl()``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Lesson", "build_tiny", "echo_tool_call", "tool_schema"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
CORPUS = [
    "Try to echo 'Hello World!' in the environment.",
    "Make the environment echo 'Goodbye World!'",
    "You may call one or more functions to assist with the user query.",
    '{"name": "echo", "arguments": {"message": "Hello World!"}}',
    "The quick brown fox jumps over the lazy dog. 0123456789",
]


@dataclass
class Lesson:
    """Prompts (chat message lists) the model should answer with one of ``completions`` (raw text
    after the generation prompt; end it with ``<|im_end|>`` to stop there)."""

    prompts: Sequence[list[dict[str, Any]]]
    completions: Sequence[str]
    tools: list[dict[str, Any]] | None = None
    chat_template_kwargs: dict[str, Any] = field(default_factory=lambda: {"enable_thinking": False})


def tool_schema(fn: Any) -> dict[str, Any]:
    """The JSON schema TRL renders for a tool method (transformers' ``get_json_schema``)."""
    from transformers.utils import get_json_schema

    return get_json_schema(fn)


def echo_tool_call(message: str, name: str = "echo") -> str:
    """A Qwen3-style tool call completion (what TRL parses), ended with ``<|im_end|>``."""
    import json

    body = json.dumps({"name": name, "arguments": {"message": message}})
    return f"<tool_call>\n{body}\n</tool_call><|im_end|>"


def _tokenizer(texts: Sequence[str]) -> Any:
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_chat_template

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        min_frequency=1,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    # trained on the pieces between chat markers, as encoding will split them (markers are added tokens)
    markers = re.compile("|".join(re.escape(m) for m in (*SPECIAL, *MARKERS)))
    tok.train_from_iterator([p for t in (*CORPUS, *texts) for p in markers.split(t) if p], trainer=trainer)
    tok.add_tokens([AddedToken(m, special=False, normalized=False) for m in MARKERS])
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        bos_token=None,
        unk_token=None,
        additional_special_tokens=SPECIAL[1:],
    )
    fast.chat_template = qwen3_chat_template
    return fast


def _render(tokenizer: Any, lesson: Lesson, prompt: list[dict[str, Any]]) -> str:
    return tokenizer.apply_chat_template(
        prompt, tools=lesson.tools, add_generation_prompt=True, tokenize=False, **lesson.chat_template_kwargs
    )


def _fit(model: Any, tokenizer: Any, lessons: Sequence[Lesson], *, steps: int, seed: int) -> None:
    """Teach ``model`` each lesson's completions after its prompts (loss on the completion only)."""
    import torch

    rows = []
    for lesson in lessons:
        for prompt in lesson.prompts:
            ids = tokenizer(_render(tokenizer, lesson, prompt), add_special_tokens=False)["input_ids"]
            for completion in lesson.completions:
                out = tokenizer(completion, add_special_tokens=False)["input_ids"]
                rows.append((ids + out, [-100] * len(ids) + out))
    width = max(len(r[0]) for r in rows)
    pad = tokenizer.pad_token_id
    input_ids = torch.tensor([r[0] + [pad] * (width - len(r[0])) for r in rows])
    labels = torch.tensor([r[1] + [-100] * (width - len(r[1])) for r in rows])
    mask = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows])
    torch.manual_seed(seed)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        optim.zero_grad()
        loss.backward()
        optim.step()
    model.eval()


def build_tiny(
    path: str | os.PathLike[str],
    *,
    teach: Sequence[Lesson] = (),
    steps: int = 60,
    seed: int = 0,
    hidden_size: int = 32,
    layers: int = 2,
) -> Path:
    """Write a tiny Qwen2 causal LM and its tokenizer to ``path``; returns ``path``.

    ``teach``: lessons fitted for ``steps`` optimiser steps (see the module docstring).
    """
    import torch
    from transformers import AutoTokenizer, GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(path)
    out.mkdir(parents=True, exist_ok=True)
    draft = _tokenizer([])  # renders the chat template; the real vocabulary is trained on its output
    texts = [_render(draft, lesson, p) for lesson in teach for p in lesson.prompts]
    texts += [c for lesson in teach for c in lesson.completions] * 20  # merged early: fewer tokens to teach
    tokenizer = _tokenizer(texts)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, do_sample=True
    )
    tokenizer.save_pretrained(out)
    config.save_pretrained(out)
    if teach:  # with the tokenizer as TRL loads it (transformers picks Qwen2's pre-tokenizer by model type)
        _fit(model, AutoTokenizer.from_pretrained(out), teach, steps=steps, seed=seed)
    model.save_pretrained(out)
    return out
