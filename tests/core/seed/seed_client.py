import asyncio
from openenv.core import EnvClient, StepResult
from dataclasses import dataclass
from typing import Any
 
@dataclass
class MyAction:
    text: str
 
@dataclass
class MyObservation:
    response: str
 
class MyEnvClient(EnvClient[MyAction, MyObservation, Any]):
    def _step_payload(self, action: MyAction) -> dict:
        return {"text": action.text}
 
    def _parse_result(self, payload: dict) -> StepResult[MyObservation]:
        obs_data = payload["observation"]
        return StepResult(
            observation=MyObservation(**obs_data),
            reward=payload.get("reward"),
            done=payload.get("done", False)
        )
 
    def _parse_state(self, payload: dict) -> Any:
        return payload
 
# Async usage (recommended)
async def main():
    client = await MyEnvClient.from_docker_image("my-env:latest")
    async with client:
        result = await client.reset()
        step_result = await client.step(MyAction(text="hello"))
 
asyncio.run(main())
 
# Sync usage (via .sync() wrapper)
with MyEnvClient(base_url="http://localhost:8000").sync() as client:
    result = client.reset()
    step_result = client.step(MyAction(text="hello"))
