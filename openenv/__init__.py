"""OpenEnv Studio: agentic RL execution environments, wire-compatible with OpenEnv."""

__version__ = "0.1.0"
