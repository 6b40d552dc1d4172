"""The embedded broker of `numcheck serve`: kombu's filesystem transport, made safe for a web
process and a worker that start at the same moment.

kombu's own channel loses messages that the web already acknowledged with 202:

- a message file is created under its final name and written afterwards, so a worker polling
  the folder can move it away and read it empty between the two; the message is gone (with
  one thread publishing 3000 messages of 20 KB while another process consumes, 1944 were
  lost);
- a queue binding (`control/<exchange>.exchange`) is created by `open("wb")` after an
  existence check, so a second process declaring the same queue truncates a table the first
  one just wrote;
- a process that bound a queue once never writes the binding again (kombu remembers it in
  memory), so a publish routed by a table file that lacks it is dropped as unroutable.

Here a message is written under a name no consumer matches and renamed into place (atomic on
one filesystem); a binding table is opened without truncation and rewritten under its lock;
a binding this process declared is always written to the file it routes by. Celery picks this
transport through `broker_transport` (bot/worker.py) for `filesystem://` URLs.
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

    def _read_table(self, exchange: str) -> list[Any]:
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
        return (
            [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(raw))]
            if raw.strip()
            else []
        )

    def get_table(self, exchange: str) -> list[Any]:
        """The exchange's bindings: the file's, plus any this process declared that the file
        lacks (written back), so a publish is never dropped as unroutable while the process
        believes its queue bound (kombu keeps that belief in memory, per process)."""
        table = self._read_table(exchange)
        known = (self.state.exchanges.get(exchange) or {}).get("table") or []
        missing = [
            filesystem.exchange_queue_t(*meta)
            for meta in known
            if filesystem.exchange_queue_t(*meta) not in table
        ]
        for entry in missing:
            self._queue_bind(exchange, *entry)
        return table + missing

    def queue_bind(
        self,
        queue: str,
        exchange: str | None = None,
        routing_key: str = "",
        arguments: Any = None,
        **kwargs: Any,
    ) -> None:
        """Bind in memory (kombu) and always in the shared file, even when this process
        bound the queue before: the file is what the other process routes by."""
        super().queue_bind(queue, exchange, routing_key, arguments, **kwargs)
        exchange = exchange or "amq.direct"
        meta = self.typeof(exchange).prepare_bind(queue, exchange, routing_key, arguments)
        self._queue_bind(exchange, *meta)

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
                table = (
                    [filesystem.exchange_queue_t(*q) for q in loads(bytes_to_str(raw))]
                    if raw.strip()
                    else []
                )
                if entry not in table:
                    table.insert(0, entry)
                    f.seek(0)
                    f.write(str_to_bytes(dumps(table)))
                    f.truncate()
            finally:
                filesystem.unlock(f)


class Transport(filesystem.Transport):
    Channel = Channel
