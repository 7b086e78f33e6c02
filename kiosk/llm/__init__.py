"""Language models behind one small interface: llama.cpp in-process or an OpenAI-compatible server."""

from kiosk.llm.backend import LLM, Message, Usage
from kiosk.llm.factory import create_llm

__all__ = ["LLM", "Message", "Usage", "create_llm"]
