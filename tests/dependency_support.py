"""Wheels and source archives built in a test's tmp_path: a package index on disk for
`runners/dependencies.py` (NUMCHECK_PACKAGE_INDEX=<folder>), so the tests run real pip with
no network."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import http.server
import io
import json
import re
import tarfile
import threading
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path


def make_wheel(
    folder: Path, name: str, version: str, files: Mapping[str, str], requires: Iterable[str] = ()
) -> Path:
    """A pure-Python wheel with a valid RECORD, as a build backend would write it."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name.replace('-', '_')}-{version}"
    wheel = folder / f"{dist}-py3-none-any.whl"
    contents = dict(files)
    contents[f"{dist}.dist-info/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )
    contents[f"{dist}.dist-info/WHEEL"] = (
        "Wheel-Version: 1.0\nGenerator: numcheck-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, text in contents.items():
        data = text.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(data)}")
    record.append(f"{dist}.dist-info/RECORD,,")
    contents[f"{dist}.dist-info/RECORD"] = "\n".join(record) + "\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in contents.items():
            archive.writestr(path, text)
    return wheel


def make_sdist(folder: Path, name: str, version: str, setup_py: str) -> Path:
    """A source archive whose setup.py would run if pip ever built it."""
    folder.mkdir(parents=True, exist_ok=True)
    sdist = folder / f"{name}-{version}.tar.gz"
    with tarfile.open(sdist, "w:gz") as archive:
        for path, text in (
            (f"{name}-{version}/setup.py", setup_py),
            (
                f"{name}-{version}/PKG-INFO",
                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
            ),
        ):
            data = text.encode()
            info = tarfile.TarInfo(path)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return sdist


@contextlib.contextmanager
def dated_index(folder: Path, uploaded: Mapping[str, str]) -> Iterator[str]:
    """`folder` served as a package index speaking PyPI's JSON pages (PEP 691), with each
    file's upload time (PEP 700) from `uploaded` ({file name: ISO time}): what
    runners/release_dates.py reads to resolve a commit's requirements as of its day. Yields
    the index URL (`http://127.0.0.1:<port>/simple`), which pip treats as a secure origin."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            parts = [p for p in self.path.split("/") if p]
            if len(parts) == 2 and parts[0] == "simple":
                body = json.dumps(_project_page(folder, parts[1], uploaded)).encode()
                self._send(body, "application/vnd.pypi.simple.v1+json")
            elif len(parts) == 2 and parts[0] == "files" and (folder / parts[1]).is_file():
                self._send((folder / parts[1]).read_bytes(), "application/octet-stream")
            else:
                self.send_error(404)

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/simple"
    finally:
        server.shutdown()
        server.server_close()


def _project_page(folder: Path, project: str, uploaded: Mapping[str, str]) -> dict[str, object]:
    def canonical(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    files = [
        path
        for path in sorted(folder.iterdir())
        if canonical(re.split(r"-\d", path.name, maxsplit=1)[0]) == canonical(project)
    ]
    return {
        "meta": {"api-version": "1.1"},
        "name": canonical(project),
        "files": [
            {
                "filename": path.name,
                "url": f"/files/{path.name}",
                "hashes": {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()},
                **({"upload-time": uploaded[path.name]} if path.name in uploaded else {}),
            }
            for path in files
        ],
    }
