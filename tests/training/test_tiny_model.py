"""The tiny local model and tokenizer TRL tests train (``tiny_model``)."""

from __future__ import annotations

from tests.training import require_trl
from tests.training.conftest import echo


def test_taught_model_writes_parsable_tool_calls_offline(tmp_path, monkeypatch):
    require_trl()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl.chat_template_utils import add_response_schema, parse_response, supports_tool_calling

    from tests.training.tiny_model import Lesson, build_tiny, echo_tool_call, tool_schema

    prompt = [{"role": "user", "content": "Try to echo 'Hello World!' in the environment."}]
    lesson = Lesson(prompts=[prompt], completions=[echo_tool_call("Hello World!"), echo_tool_call("hi")],
                    tools=[tool_schema(echo)])
    path = build_tiny(tmp_path / "tiny", teach=[lesson])
    tok = add_response_schema(AutoTokenizer.from_pretrained(path))
    model = AutoModelForCausalLM.from_pretrained(path)
    assert supports_tool_calling(tok) and model.config.num_hidden_layers == 2 and model.config.hidden_size == 32
    ids = tok.apply_chat_template(prompt, tools=lesson.tools, add_generation_prompt=True, enable_thinking=False,
                                  return_dict=True, return_tensors="pt")
    torch.manual_seed(0)
    out = model.generate(**ids, max_new_tokens=32, do_sample=True, num_return_sequences=8)
    width = ids["input_ids"].shape[1]
    completions = [o[width:].tolist() for o in out]
    completions = [c[: c.index(tok.eos_token_id) + 1] if tok.eos_token_id in c else c for c in completions]
    prompt_ids = ids["input_ids"][0].tolist()
    parsed = [parse_response(tok, c, prefix=prompt_ids) for c in completions]
    calls = [p["tool_calls"][0]["function"]["arguments"]["message"] for p in parsed if p.get("tool_calls")]
    assert len(calls) >= 6, [tok.decode(c) for c in completions]  # sampled at temperature 1: a slip is allowed
    assert set(calls) == {"Hello World!", "hi"}  # both taught calls are sampled
