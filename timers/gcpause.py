"""Python's cyclic garbage collector paused for the length of one batch of the tick.

A batch holds what it read and fired (timers, cached rows, kept writes) until it commits: tens of
thousands of live container objects. The collector's young generations fill up every few hundred
allocations, find those objects alive, and promote them, and the promotions trigger full collections
that walk every object the process has. Measured on the Tax Plan's year at 1,000 subscribers (2 vCPU,
bench/domain_throughput.py): 71 full collections took 4.3 s of 36 s of Python, and more the larger the
run's memory, so the cost per fire grew with the number of subscribers.

With the collector paused, what the batch drops is freed by reference counting as ever (it holds
almost no cycles); the batch's surviving objects are looked at once, by the young collection that
runs when the pause ends, after the batch has let go of them. A cycle made in a batch lives until then:
memory is bounded by a batch.

The pause is process-wide (the collector is), so it is counted: with several runs in threads, the
collector comes back when the last of them leaves its batch, and only if it was on before the first.
"""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator

_lock = threading.Lock()
_paused = 0
_was_enabled = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    global _paused, _was_enabled
    with _lock:
        if _paused == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _paused += 1
    try:
        yield
    finally:
        with _lock:
            _paused -= 1
            if _paused == 0 and _was_enabled:
                gc.enable()
