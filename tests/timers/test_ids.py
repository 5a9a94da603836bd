"""Random ids are drawn ahead in bulk (timers/ids.py): each still unique, of the same alphabet and length, and a
forked child (a worker's process) never mints what its parent has drawn ahead."""

from __future__ import annotations

import os
import re

from timers.ids import new_id


def test_random_ids_are_unique_and_shaped_as_before():
    ids = [new_id("cmt") for _ in range(5000)]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"cmt_[A-Za-z0-9]{14}", i) for i in ids)
    assert re.fullmatch(r"tc_[A-Za-z0-9]{20}", new_id("tc", length=20))


def test_a_forked_child_mints_none_of_its_parents_next_ids():
    new_id("evt")  # the parent has ids drawn ahead
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child's side
        os.close(read)
        os.write(write, " ".join(new_id("evt") for _ in range(50)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        child = set(f.read().split())
    os.waitpid(pid, 0)
    parent = {new_id("evt") for _ in range(50)}
    assert len(child) == 50 and not child & parent
