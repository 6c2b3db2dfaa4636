"""``signals_held()``: Ctrl-C and SIGTERM held back while a launcher starts its processes.

A process being started is not yet a process the launcher can stop: ``Process.start()`` has asked
the fork server for a child, which is reading its arguments, but no pid has come back. A Ctrl-C
that lands there leaves a child nobody stops, which then finds the launcher gone (its queue's
semaphore unlinked) and prints multiprocessing's traceback. Held back, the signal arrives the
moment the last process has started (or the block has failed), and the launcher stops every one
of them. A second signal is not held: whoever insists is obeyed at once.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def signals_held(signums: tuple[int, ...] = HELD) -> Iterator[None]:
    """Hold ``signums`` (Ctrl-C, SIGTERM) inside the block; the first that came is raised again at
    its end, to the handlers that were there before (a ``KeyboardInterrupt``, for Ctrl-C), also when
    the block raises. A second one goes to those handlers at once. Outside the main thread, where
    handlers cannot be set, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    came: list[int] = []
    previous: dict[int, object] = {}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def hold(signum: int, frame: object) -> None:
        if came:  # the second: restore the handlers and let it through now
            came.clear()
            restore()
            signal.raise_signal(signum)
        else:
            came.append(signum)

    previous.update({signum: signal.signal(signum, hold) for signum in signums})
    try:
        yield
    finally:
        restore()
        if came:
            signal.raise_signal(came[0])
