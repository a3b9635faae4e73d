"""``memlab serve-llm``: a GGUF model behind an OpenAI-compatible HTTP endpoint, in this process.

llama.cpp's own server (``llama_cpp.server``, installed by ``memlab[local]``) answers
``/v1/chat/completions`` and ``/v1/models``, so ``OpenAIChat`` (and every peer library that
speaks the OpenAI API) talks to it unchanged::

    memlab serve-llm --port 8077 --api-key secret        # the default model (Qwen2.5-Coder-1.5B-Instruct)
    memlab serve-llm --model qwen2.5-coder-0.5b          # another registered model, or --model PATH.gguf
    OPENAI_BASE_URL=http://127.0.0.1:8077/v1 OPENAI_API_KEY=secret MEMLAB_LLM_MODEL=local \\
        memlab eval datasets --strategy layered --set llm=openai

- it listens on 127.0.0.1 unless ``host`` names another address explicitly;
- with ``api_key`` every request must carry ``Authorization: Bearer <key>`` (HTTP 401 otherwise);
- the model is served under the name ``model_alias`` (requests naming another model get it too);
- the chat format is resolved as ``LocalLLM`` resolves it (``chatml`` for the Qwen models; the
  base Gemma 3 270M: a plain transcript, ``TRANSCRIPT_FORMAT``, registered in this process
  before the server starts); threads and GPU layers too (``resolved_threads``,
  ``resolved_gpu_layers``). llama.cpp's server keeps the KV of the previous request and reuses
  its common prefix, as ``LocalLLM``'s ``prompt_cache="prefix"`` does.
"""

from __future__ import annotations

from typing import Any

from ..base import ConfigError
from .chat_formats import MEMLAB_FORMATS, register_chat_format
from .local import LocalLLM

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
    if chat_format in MEMLAB_FORMATS:
        register_chat_format()
    threads = llm.resolved_threads()
    model: dict[str, Any] = {"model": str(llm.resolved_path()), "model_alias": model_alias, "n_ctx": llm.n_ctx,
                             "n_gpu_layers": llm.resolved_gpu_layers(), "seed": llm.seed, "verbose": llm.verbose,
                             "n_threads": threads, "n_threads_batch": threads}
    if chat_format is not None:
        model["chat_format"] = chat_format
    server = ServerSettings(host=host, port=port, api_key=api_key or None)
    return create_app(server_settings=server, model_settings=[ModelSettings(**model)])


def serve(llm: LocalLLM, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, api_key: str | None = None,
          model_alias: str = DEFAULT_ALIAS) -> None:
    """Serve until interrupted (uvicorn)."""
    import uvicorn

    app = build_app(llm, api_key=api_key, model_alias=model_alias, host=host, port=port)
    uvicorn.run(app, host=host, port=port, log_level="warning")
