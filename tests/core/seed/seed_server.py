from openenv.core.env_server import Environment, HTTPEnvServer, create_app
from dataclasses import dataclass
 
@dataclass
class MyAction:
    text: str
 
@dataclass
class MyObservation:
    response: str
    reward: float = 0.0
    done: bool = False
 
class MyEnvironment(Environment):
    def reset(self) -> MyObservation:
        return MyObservation(response="Ready")
 
    def step(self, action: MyAction) -> MyObservation:
        return MyObservation(
            response=f"Echo: {action.text}",
            reward=1.0,
            done=False
        )
 
# Create FastAPI app
env = MyEnvironment()
app = create_app(env, MyAction, MyObservation)
 
# Run with: uvicorn module:app --host 0.0.0.0 --port 8000
