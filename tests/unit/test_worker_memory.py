"""Parse workers keep freed memory (ingest.workers.keep_freed_memory): glibc's defaults
gave a worker's freed heap back to the kernel after each task, to fault it in again."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# Allocate and free 100 MB in 64 KB blocks (below glibc's mmap threshold, so from the
# heap), four times; print the minor page faults of each round.
ROUNDS = textwrap.dedent("""
    import json, resource, sys
    {setup}
    def one_round():
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        blocks = [bytearray(65536) for _ in range(1600)]
        del blocks
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    print(json.dumps([one_round() for _ in range(4)]))
""")


def faults(setup: str) -> list[int]:
    out = subprocess.run([sys.executable, "-c", ROUNDS.format(setup=setup)], capture_output=True, text=True,
                         check=True)
    return [int(n) for n in out.stdout.strip().strip("[]").split(",")]


def glibc() -> bool:
    import platform

    return sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"


@pytest.mark.skipif(not glibc(), reason="the setting is glibc's malloc's")
def test_defaults_give_freed_heap_back():
    """The baseline the setting is for: every round faults its 100 MB in again."""
    rounds = faults("")
    assert min(rounds[1:]) > 20_000


@pytest.mark.skipif(not glibc(), reason="the setting is glibc's malloc's")
def test_worker_reuses_freed_heap():
    """A process set up as a parse worker faults the memory in once, then reuses it."""
    rounds = faults("from ingest.workers import init_pool_worker\ninit_pool_worker({}, without_torch=True)")
    assert rounds[0] > 20_000
    assert max(rounds[1:]) < 1_000


def test_keep_freed_memory_says_whether_it_applied():
    out = subprocess.run([sys.executable, "-c", "from ingest.workers import keep_freed_memory as k; print(k())"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(glibc())


@pytest.mark.skipif(not glibc(), reason="the setting is glibc's malloc's")
def test_parsing_in_process_leaves_the_callers_malloc_alone():
    """``--workers 0`` parses in the calling process: its malloc keeps glibc's defaults."""
    rounds = faults("from ingest.workers import init_worker\ninit_worker({}, without_torch=True)")
    assert min(rounds[1:]) > 20_000
