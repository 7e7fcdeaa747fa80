"""The ``model.wait`` notices published while a model call runs.

A model call can take up to its deadline; the notices tell whoever follows the
events that it is still running, and for how long so far.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from sentient_core.events import Emitter, ModelWaitEvent

__all__ = ["wait_notices"]


@contextlib.contextmanager
def wait_notices(
    emit: Emitter | None,
    request_id: str,
    every_s: float,
    deadline_s: float,
    timer: Callable[[], float],
) -> Iterator[None]:
    """Publish ``model.wait`` every ``every_s`` seconds until the block ends.

    A thread does the publishing; none is started without ``emit`` or with
    ``every_s <= 0``. The thread is stopped and joined when the block ends.
    """
    if emit is None or every_s <= 0:
        yield
        return
    done = threading.Event()
    start = timer()

    def notify() -> None:
        while not done.wait(every_s):
            emit.emit(
                ModelWaitEvent,
                id=request_id,
                elapsed_s=timer() - start,
                deadline_s=deadline_s,
            )

    thread = threading.Thread(target=notify, name="sentient-model-wait", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
