"""The embedded broker of `numcheck serve`: kombu's filesystem transport, made safe for a web
process and a worker that start at the same moment.

kombu's own channel has two races, both of which lose a message that the web already
acknowledged with 202:

- a message file is created under its final name and written afterwards, so a worker polling
  the folder can move it away and read it empty between the two (the message is gone);
- a queue binding (`control/<exchange>.exchange`) is created by `open("wb")` after an
  existence check, so a second process declaring the same queue truncates a table the first
  one just wrote, and a publish that reads the table then finds no queue to route to.

Here a message is written under a name no consumer matches and renamed into place (atomic on
one filesystem), and a binding table is opened without truncation and rewritten under its
lock. Celery picks this transport through `broker_transport` (bot/tasks.py) for
`filesystem://` URLs.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from time import monotonic
from typing import Any

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads

TRANSPORT = "bot.broker:Transport"


class Channel(filesystem.Channel):
    def _put(self, queue: Any, message: Any, **kwargs: Any) -> None:  # type: ignore[override]  # kombu names it two ways
        """Write the message under a hidden name, then rename it into the queue."""
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = os.path.join(self.data_folder_out, f".{name}.part")
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(message)))
            os.replace(partial, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(partial)
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def get_table(self, exchange: str) -> list[Any]:
        """The exchange's bindings; a table being created (still empty) has none yet."""
        file = self._exchange_file(exchange)
        try:
            with file.open("rb") as f:
                filesystem.lock(f, filesystem.LOCK_SH)
                try:
                    raw = f.read()
                finally:
                    filesystem.unlock(f)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        return [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(raw))] if raw.strip() \
            else []

    def _queue_bind(self, exchange: str, routing_key: str, pattern: str, queue: str) -> None:
        """Add the binding under an exclusive lock, never truncating a table another process
        wrote."""
        file = self._exchange_file(exchange)
        self.control_folder.mkdir(exist_ok=True)
        entry = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")
        try:
            fd = os.open(file, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        with os.fdopen(fd, "rb+", buffering=0) as f:
            filesystem.lock(f, filesystem.LOCK_EX)
            try:
                raw = f.read()
                table = [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(raw))] \
                    if raw.strip() else []
                if entry not in table:
                    table.insert(0, entry)
                    f.seek(0)
                    f.write(str_to_bytes(dumps(table)))
                    f.truncate()
            finally:
                filesystem.unlock(f)


class Transport(filesystem.Transport):
    Channel = Channel
