"""Models from disk first, the Hugging Face hub only when it can answer.

The one policy the transformers backend, the embedder and the COMET scorer share: a local
directory or the local cache needs no network; with HF_HUB_OFFLINE set, or a hub that does
not answer within seconds, a missing model fails at once saying how to provide it, instead
of hanging on a download.
"""

from __future__ import annotations

import socket
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar
from urllib.parse import urlparse

from scoi.config import environment, hf_endpoint, hf_offline


def model_name(model: str) -> str:
    """The name an embedder is stored under: a local directory's absolute path, else the
    hub name as given (so the same model given two ways is one embedder). Here, not in
    scoi.embedding.embedder, so a job's settings are named without importing numpy."""
    local = Path(model).expanduser()
    return str(local.resolve()) if local.is_dir() else model


__all__ = ["from_disk_or_hub", "hub_reachable", "model_name", "offline"]

T = TypeVar("T")


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub endpoint opens within ``timeout`` seconds.

    Runs in a daemon thread because name resolution ignores socket timeouts.
    """
    parsed = urlparse(hf_endpoint())
    host = parsed.hostname or "huggingface.co"
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    result: list[bool] = []

    def probe() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    thread = threading.Thread(target=probe, daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    return bool(result and result[0])


def from_disk_or_hub(load: Callable[[bool], T], *, what: str, local: bool, how_to_provide: str,
                     error: type[Exception]) -> T:
    """``load(local_files_only)`` from disk (a ``local`` directory, or the hub id's cached
    copy), then from the hub only if downloads are allowed and the hub answers.

    ``load`` raises ``error`` when it fails; ``what`` names the model in the messages."""
    if local:
        return load(True)
    try:  # the local cache first: no network needed if the model was fetched before
        return load(True)
    except error as cached_error:
        if hf_offline():
            raise error(f"{what} is not available offline: it is not a local directory and not in the "
                        f"Hugging Face cache, and HF_HUB_OFFLINE is set. {how_to_provide}") from cached_error
    if not hub_reachable():
        raise error(f"{what} is not available offline: it is not a local directory, not in the Hugging Face "
                    f"cache, and the hub cannot be reached. {how_to_provide}")
    return load(False)


@contextmanager
def offline() -> Iterator[None]:
    """Hugging Face libraries in offline mode for a block: a missing file fails at once, no download."""
    patched = None
    try:  # huggingface_hub reads HF_HUB_OFFLINE at import: patch it if already imported
        import huggingface_hub.constants as hc

        patched, hc.HF_HUB_OFFLINE = hc.HF_HUB_OFFLINE, True
    except Exception:  # noqa: BLE001 - not installed: nothing to patch
        hc = None
    try:
        with environment({k: "1" for k in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")}):
            yield
    finally:
        if hc is not None and patched is not None:
            hc.HF_HUB_OFFLINE = patched
