"""The static pass: libcst over changed files, findings on changed lines."""

from analyzers.static.scanner import FileScan, scan_bytes, scan_source

__all__ = ["FileScan", "scan_bytes", "scan_source"]
