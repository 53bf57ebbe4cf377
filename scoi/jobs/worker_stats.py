"""What a worker counts while it runs (``scoi worker --json`` prints it): items by outcome,
time spent generating and around generation, per phase."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class WorkerStats:
    worker: str
    claimed: int = 0
    done: int = 0
    reused: int = 0        # of the done: the memory's translation of an exact match, no model call
    requeued: int = 0
    failed: int = 0
    lost: int = 0          # results not written: the claim was lost (stalled and re-claimed by another worker)
    cancelled: int = 0     # results not written: the job was cancelled while they ran
    batches: int = 0
    seconds: float = 0.0
    generate_ms: float = 0.0
    overhead_ms: float = 0.0
    retries: int = 0       # requests an HTTP backend sent again after a transient failure (server down, 5xx)
    errors: list[str] = field(default_factory=list)  # distinct error messages, first few
    #: Where the time goes, ms summed over items (claim, parse, select, prompt,
    #: prepare_wait, record, write): the benchmark's breakdown.
    phase_ms: dict[str, float] = field(default_factory=dict)

    def add_phase(self, name: str, ms: float) -> None:
        self.phase_ms[name] = self.phase_ms.get(name, 0.0) + ms

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["items_per_second"] = round(self.done / self.seconds, 3) if self.seconds else 0.0
        d["overhead_ms_per_item"] = round(self.overhead_ms / self.claimed, 3) if self.claimed else 0.0
        d["seconds"] = round(self.seconds, 3)
        d["generate_ms"] = round(self.generate_ms, 3)
        d["overhead_ms"] = round(self.overhead_ms, 3)
        d["phase_ms_per_item"] = {k: round(v / self.claimed, 3) for k, v in self.phase_ms.items()} if self.claimed else {}
        d.pop("phase_ms")
        return d


__all__ = ["WorkerStats"]
