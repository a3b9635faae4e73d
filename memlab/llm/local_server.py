"""``memlab serve-llm``: a GGUF model behind an OpenAI-compatible HTTP endpoint, in this process.

llama.cpp's own server (``llama_cpp.server``, installed by ``memlab[local]``) answers
``/v1/chat/completions`` and ``/v1/models``, so ``OpenAIChat`` (and every peer library that
speaks the OpenAI API) talks to it unchanged::

    memlab serve-llm --port 8077 --api-key secret        # the bundled Gemma 3 270M
    OPENAI_BASE_URL=http://127.0.0.1:8077/v1 OPENAI_API_KEY=secret MEMLAB_LLM_MODEL=local \\
        memlab eval datasets --strategy layered --set llm=openai

- it listens on 127.0.0.1 unless ``host`` names another address explicitly;
- with ``api_key`` every request must carry ``Authorization: Bearer <key>`` (HTTP 401 otherwise);
- the model is served under the name ``model_alias`` (requests naming another model get it too);
- the chat format is resolved as ``LocalLLM`` resolves it (the bundled base model: a plain
  transcript, ``TRANSCRIPT_FORMAT``, registered in this process before the server starts).
"""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from .local import _OURS, LocalLLM, register_chat_format

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8077
DEFAULT_ALIAS = "local"


def build_app(llm: LocalLLM, api_key: str | None = None, model_alias: str = DEFAULT_ALIAS,
              host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> Any:
    """The llama.cpp server's ASGI app for ``llm``'s model and settings (loads the model)."""
    try:
        from llama_cpp.server.app import create_app
        from llama_cpp.server.settings import ModelSettings, ServerSettings
    except ImportError as exc:
        raise ConfigError(f"memlab serve-llm needs llama-cpp-python with its server extras "
                          f"(pip install 'memlab[local]'): {exc}") from None
    chat_format = llm.resolved_chat_format()
    if chat_format in _OURS:
        register_chat_format()
    model: dict[str, Any] = {"model": str(llm.resolved_path()), "model_alias": model_alias, "n_ctx": llm.n_ctx,
                             "n_gpu_layers": llm.n_gpu_layers, "seed": llm.seed, "verbose": llm.verbose}
    if chat_format is not None:
        model["chat_format"] = chat_format
    if llm.n_threads is not None:
        model["n_threads"] = model["n_threads_batch"] = llm.n_threads
    server = ServerSettings(host=host, port=port, api_key=api_key or None)
    return create_app(server_settings=server, model_settings=[ModelSettings(**model)])


def serve(llm: LocalLLM, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, api_key: str | None = None,
          model_alias: str = DEFAULT_ALIAS) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    app = build_app(llm, api_key=api_key, model_alias=model_alias, host=host, port=port)
    uvicorn.run(app, host=host, port=port, log_level="warning")
