"""torch.Stream and torch.Event as torch 2.13 has them on the CPU: one stream (id 0, device index
-1) on which work is always complete (query answers True, synchronize and waits on an event
return at once), and no events to record (torch's CPU backend has none: the same error)."""

from __future__ import annotations

from typing import Any

from gradviz.device import device as Device

__all__ = ["Event", "Stream"]

_NO_EVENTS = "cpu backend doesn't support events."


def _cpu(device: Any) -> None:
    kind = Device(device).type if device is not None else "cpu"
    if kind != "cpu":
        raise RuntimeError(f"PyTorch is not linked with support for {kind} devices")


class Stream:
    def __init__(self, device: Any = None, *, priority: int = 0, **_: Any) -> None:
        _cpu(device)
        self.device_type, self.device_index, self.stream_id = "cpu", -1, 0

    @property
    def device(self) -> Device:
        return Device("cpu")

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait_event(self, event: Event) -> None:
        return None

    def wait_stream(self, stream: Stream) -> None:
        raise RuntimeError(_NO_EVENTS)  # torch records an event on the other stream first

    def record_event(self, event: Event | None = None) -> Event:
        raise RuntimeError(_NO_EVENTS)

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream)

    def __hash__(self) -> int:
        return hash(("cpu", -1, 0))

    def __repr__(self) -> str:
        return (f"torch.Stream device_type={self.device_type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    def __init__(self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False) -> None:
        _cpu(device)
        self.device_type, self.device_index, self.event_id = "cpu", -1, 0

    @property
    def device(self) -> Device:
        return Device("cpu")

    def record(self, stream: Stream | None = None) -> None:
        raise RuntimeError(_NO_EVENTS)

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        return None

    def wait(self, stream: Stream | None = None) -> None:
        return None

    def elapsed_time(self, end_event: Event) -> float:
        raise ValueError("Both events must be recorded before calculating elapsed time.")

    def __repr__(self) -> str:
        return f"torch.Event device_type={self.device_type}, device_index={self.device_index}, event_flag=0, " \
               f"event_id={self.event_id}"
