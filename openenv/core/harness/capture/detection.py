"""0.10's ``openenv.core.harness.capture.detection``: which wire dialect a request speaks."""

from openenv.capture.detection import APIType, detect, extract_model

__all__ = ["APIType", "detect", "extract_model"]
