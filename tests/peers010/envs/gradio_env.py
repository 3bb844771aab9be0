"""A 0.10-style env whose author ships a Gradio UI (``gradio_builder``) and a probe route using its manager."""

from typing import Any

import gradio as gr

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Action, Environment, Observation, State

MANAGERS = []


class SayAction(Action):
    text: str


class SayObservation(Observation):
    echoed: str = ""


class SayEnvironment(Environment[SayAction, SayObservation, State]):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> SayObservation:
        self._state = State(episode_id=episode_id)
        return SayObservation(echoed="")

    def step(self, action: SayAction, timeout_s: float | None = None, **kwargs: Any) -> SayObservation:
        self._state.step_count += 1
        return SayObservation(echoed=action.text, reward=float(len(action.text)))

    @property
    def state(self) -> State:
        return self._state


def build(web_manager, action_fields, metadata, is_chat_env, title, quick_start_md):
    MANAGERS.append({"manager": web_manager, "fields": action_fields, "title": title, "chat": is_chat_env})
    with gr.Blocks(title=title) as blocks:
        gr.Markdown("Custom say-panel")
        box = gr.Textbox(label="Say something")
        out = gr.JSON(label="Result")

        async def say(text):
            await web_manager.reset_environment()
            return await web_manager.step_environment({"text": text})

        gr.Button("Say").click(say, inputs=box, outputs=out, api_name="say")
    return blocks


app = create_app(SayEnvironment, SayAction, SayObservation, "say", 2, gradio_builder=build, title_override="Say UI")


@app.post("/probe")
async def probe(body: dict) -> dict:
    entry = MANAGERS[0]
    await entry["manager"].reset_environment({})
    result = await entry["manager"].step_environment({"text": body["text"]})
    return {"result": result, "fields": entry["fields"], "title": entry["title"], "chat": entry["chat"]}
