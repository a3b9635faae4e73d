"""Agent memories: blocks combined behind retrieve() and a budgeted get_context()."""

from .agent import ChatHistoryMemory, LongtermAgentMemory, VectorDBMemory
from .base import AgentMemory

__all__ = ["AgentMemory", "ChatHistoryMemory", "LongtermAgentMemory", "VectorDBMemory"]
