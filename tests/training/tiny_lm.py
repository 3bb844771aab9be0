"""A stand-in for ``tests/training/tiny_model.py`` (the trlcompat branch's, not on main yet): a
tiny, randomly initialised Qwen2 causal LM and a byte-level BPE tokenizer with TRL's Qwen3 chat
template, built here (no hub). Its completions are noise: tests that need the model to call a
tool use ``tiny_model``'s taught model once it lands. Remove this file then.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

__all__ = ["build"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")

_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_MARKERS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]


def build(path: Path, texts: Sequence[str] = (), *, seed: int = 0) -> Path:
    """Write the model and its tokenizer (trained on ``texts``) to ``path``; returns ``path``."""
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM
    from trl.chat_template_utils import qwen3_chat_template

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, min_frequency=1, special_tokens=_SPECIAL, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())  # fmt: skip
    tok.train_from_iterator([*texts, "Echo the message back from the environment."], trainer=trainer)
    tok.add_tokens([AddedToken(m, special=False, normalized=False) for m in _MARKERS])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                        additional_special_tokens=_SPECIAL[1:])  # fmt: skip
    tokenizer.chat_template = qwen3_chat_template
    config = Qwen2Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048,
                         tie_word_embeddings=True, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)  # fmt: skip
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id,
                                               pad_token_id=tokenizer.pad_token_id, do_sample=True)  # fmt: skip
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path
