"""Per-thread engine state, as torch keeps it in thread_local variables.

Shared by the engine and graph code (AccumulateGrad reports the task it runs in).
"""

from __future__ import annotations

import threading
from typing import Any

# worker_device value of a thread that is not running the engine.
NO_DEVICE = None


class EngineThreadState(threading.local):
    # The device this thread works for while inside the engine: "cpu" for a caller thread
    # running backward, the device string for a device worker, NO_DEVICE outside the engine.
    worker_device: str | None = NO_DEVICE
    # Reentrant backward calls nested on this thread right now.
    current_depth: int = 0
    # Reentrant depth across threads (carried into pool threads from the GraphTask).
    total_depth: int = 0
    # The ready queue this thread pops from: its own CPU queue, or its device's queue.
    local_ready_queue: Any = None
    # The GraphTask whose node this thread is running (for AccumulateGrad and queue_callback).
    current_graph_task: Any = None


tls = EngineThreadState()
