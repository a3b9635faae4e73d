"""Prompt-prefix reuse for a loaded llama.cpp model that does not change its answers.

With ``prompt_cache="prefix"`` ``LocalLLM`` keeps the KV cache of the previous call, and a prompt
that starts with the same tokens evaluates only what follows them, so the shared head of a judge
prompt, or a dialogue's context under several questions, is evaluated once per run instead of
once per question. Reused naively (llama-cpp-python's own prefix match), a kept prefix changes
answers: a KV entry computed in a batch of one length differs in the last bits from the same
entry computed in a batch of another (measured on Qwen2.5-Coder-1.5B: logits off by up to 0.46
once more than 64 tokens were reused, and 1 of 24 judge labels flipped). So the prompt is
evaluated in batches of ``PREFIX_CHUNK`` (64) tokens starting at multiples of 64, fresh or not,
and only whole batches of the previous prompt are reused (``aligned_prefix``): every KV entry then
comes from the same batch as in a fresh evaluation, and an answer does not depend on which call
came before (the tests check it; batches of 64 evaluate as fast as batches of 512 on this CPU,
measured). Gemma 3's sliding-window layers keep a cache of their own, which this was not checked
for (``prefix_safe``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PREFIX_CHUNK", "aligned_prefix", "prefix_safe"]

#: With the prefix reused, prompts are evaluated in batches of this many tokens starting at
#: multiples of it, and only whole batches are reused (``aligned_prefix``).
PREFIX_CHUNK = 64


def aligned_prefix(llama: Any, chunk: int) -> None:
    """Make ``llama`` reuse only whole, aligned batches of the previous prompt's KV cache.

    Wraps the instance's ``generate`` (which ``create_chat_completion`` calls with the prompt's
    tokens): before llama-cpp-python's own prefix match runs, the kept state is cut to the
    longest common prefix rounded down to a multiple of ``chunk``, and never beyond the whole
    batches of the previous prompt (a last, partial batch, or generated tokens, were computed in
    batches of other lengths). With ``n_batch == chunk`` the rest is then evaluated in batches
    starting at multiples of ``chunk``, as a fresh evaluation does."""
    original = llama.generate
    state = {"clean": 0}

    def generate(tokens: Any, *args: Any, **kwargs: Any) -> Any:
        tokens = list(tokens)
        if kwargs.get("reset", True) and llama.n_tokens > 0:
            kept = list(llama._input_ids[: min(llama.n_tokens, state["clean"])])
            common = 0
            for a, b in zip(kept, tokens):
                if a != b:
                    break
                common += 1
            reuse = min(common, len(tokens) - 1) // chunk * chunk  # at least one token left to evaluate
            if reuse <= 0:
                llama.reset()
            else:
                llama.n_tokens = reuse
                llama._ctx.kv_cache_seq_rm(-1, reuse, -1)
        state["clean"] = len(tokens) // chunk * chunk  # the whole batches this prompt leaves
        return (yield from original(tokens, *args, **kwargs))

    llama.generate = generate


def prefix_safe(llama: Any) -> bool:
    """Whether reusing a kept prefix is known to change no answer of this loaded model: False when
    its GGUF declares a sliding window (Gemma 3: measured to answer differently), else True."""
    metadata = getattr(llama, "metadata", None) or {}
    return not any(key.endswith(".attention.sliding_window") for key in metadata)
