"""One file in, findings out: prefilter, libcst on the candidate units, positions, suppression.

A file that cannot be read or parsed yields a `FileScan` with `error` set and no findings;
it never raises, so one bad file cannot cost the findings of the others: a file too deep for
libcst (analyzers/static/bounds.py) is refused before libcst sees it, and any exception out
of libcst or the analysis of one file becomes that file's error.
"""

from __future__ import annotations

import ast
import math
import threading
from collections.abc import Collection
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from analyzers.catalogue import CATALOGUE
from analyzers.config import Config
from analyzers.model import Finding, IntervalInfo, make_fingerprint, normalise_call
from analyzers.static.analyzer import FunctionAnalyzer
from analyzers.static.bounds import measure
from analyzers.static.explain import RULE_SEVERITY
from analyzers.static.feeds import feeding_line
from analyzers.static.prefilter import Unit, plan_file
from analyzers.static.records import FileContext, RawFinding
from analyzers.static.rules import RULES_BY_ID, RuleId
from analyzers.static.suppression import Suppressions
from analyzers.static.wrappers import is_op_wrapper

DEFAULT_CONFIG = Config()
# pattern rules outrank the generic one on a line, and the generic one outranks a candidate
RULE_RANK: dict[str, int] = {RuleId.UNGUARDED_DOMAIN: 1, RuleId.UNKNOWN_OPERAND: 2}
THREAD_PARSE_LEVELS = 60
"""A file deeper than this (and within bounds.MAX_NESTING_LEVELS) is parsed by libcst on a
thread of its own with `PARSE_STACK_BYTES` of stack: belt and braces for a process whose
stack is smaller than Linux's 8 MiB (a thread of an embedding program, Windows' 1 MiB), where
the bounded depth could still overflow it. Shallower files, nearly all, parse inline."""
PARSE_STACK_BYTES = 64 * 1024 * 1024
# Exceptions raised into the analysis from outside to stop the whole run (Celery's soft time
# limit arrives as an ordinary Exception in whatever frame is running): not one file's error.
RUN_INTERRUPTIONS = frozenset({"SoftTimeLimitExceeded", "TimeLimitExceeded"})
_STACK_SIZE_LOCK = threading.Lock()


@dataclass
class FileScan:
    path: str
    findings: list[Finding] = field(default_factory=list)
    error: str | None = None
    lines: int = 0
    units: int = 0
    suppressed: int = 0


def decode_source(
    data: bytes, path: str, config: Config = DEFAULT_CONFIG
) -> tuple[str | None, str | None]:
    """(text, error): the error says what is wrong in words a user can act on."""
    if len(data) > config.max_file_bytes:
        return None, (
            f"{path} is {len(data):,} bytes, above max_file_bytes "
            f"({config.max_file_bytes:,}); raise it in [tool.numcheck] to analyse it"
        )
    if b"\x00" in data[:8192]:
        return None, f"{path} looks binary (contains NUL bytes); skipped"
    try:
        return data.decode("utf-8-sig"), None
    except UnicodeDecodeError as exc:
        return None, (
            f"{path} is not valid UTF-8 (byte {exc.start}: {exc.reason}); "
            "save it as UTF-8 to have it analysed"
        )


def scan_bytes(
    data: bytes, path: str, config: Config | None = None, lines: frozenset[int] | None = None
) -> FileScan:
    config = config or DEFAULT_CONFIG
    text, error = decode_source(data, path, config)
    if text is None:
        return FileScan(path, error=error)
    return scan_source(text, path, config, lines)


def scan_source(
    source: str, path: str, config: Config | None = None, lines: frozenset[int] | None = None
) -> FileScan:
    """Analyse one file. `lines`, when given, keeps only findings on those (1-based) lines."""
    config = config or DEFAULT_CONFIG
    scan = FileScan(path, lines=source.count("\n") + (0 if source.endswith("\n") else 1))
    if len(source.encode("utf-8", "surrogatepass")) > config.max_file_bytes:
        scan.error = (
            f"{path} is larger than max_file_bytes ({config.max_file_bytes:,}); "
            "raise it in [tool.numcheck] to analyse it"
        )
        return scan
    try:
        tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        scan.error = f"{path}:{exc.lineno or 0}: does not parse: {exc.msg}"
        return scan
    except (ValueError, RecursionError, MemoryError) as exc:
        scan.error = f"{path}: does not parse: {exc}"
        return scan
    depth = measure(tree, source)
    refusal = depth.refusal(path)
    if refusal is not None:
        scan.error = refusal
        return scan
    try:
        _scan_tree(tree, source, path, config, lines, scan, depth.levels > THREAD_PARSE_LEVELS)
    except (cst.ParserSyntaxError, RecursionError) as exc:
        scan.findings = []
        scan.error = f"{path}: libcst could not parse the file: {_describe(exc)}"
    except Exception as exc:
        if any(c.__name__ in RUN_INTERRUPTIONS for c in type(exc).__mro__):
            raise
        scan.findings = []
        scan.error = (
            f"{path}: the static pass failed on this file ({_describe(exc)}); "
            "the other files were analysed"
        )
    return scan


def _describe(exc: BaseException) -> str:
    """`KeyError: <node>` can itself fail to print (libcst's recursive reprs): the type
    then, and no text."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - whatever str() raises, the type still says something
        text = ""
    text = text if len(text) <= 300 else text[:300] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _scan_tree(
    tree: ast.Module,
    source: str,
    path: str,
    config: Config,
    lines: frozenset[int] | None,
    scan: FileScan,
    deep: bool,
) -> None:
    plan = plan_file(tree, source)
    enabled = frozenset(op for op in CATALOGUE.by_op if config.op_enabled(op))
    ctx = FileContext(
        plan.imports,
        plan.constants,
        config.dtype,
        plan.half_precision,
        plan.primary_framework,
        None if len(enabled) == len(CATALOGUE.by_op) else enabled,
    )
    units = plan.units
    if lines is not None and not plan.whole_module:
        units = [u for u in units if any(u.start_line <= n <= u.end_line for n in lines)]
    raw: list[tuple[RawFinding, CodeRange, CodeRange, int, int]] = []
    if plan.whole_module:
        scan.units = 1
        raw = _analyse_module(source, ctx, 0, 0, deep)
    else:
        scan.units = len(units)
        for unit in units:
            raw += _analyse_unit(source, unit, ctx, deep)
    suppressions = Suppressions.from_source(source)
    scan.findings = _finalise(
        raw,
        path,
        config,
        lines,
        suppressions,
        scan,
        frozenset(plan.imports.names),
        tree,
        source.splitlines(),
    )


def parse_module(source: str, deep: bool = False) -> cst.Module:
    """`cst.parse_module`; with `deep`, on a thread with a large stack (THREAD_PARSE_LEVELS)."""
    if not deep:
        return cst.parse_module(source)
    out: list[cst.Module | BaseException] = []

    def work() -> None:
        try:
            out.append(cst.parse_module(source))
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            out.append(exc)

    with _STACK_SIZE_LOCK:  # the size applies to threads started while it is set
        try:
            previous = threading.stack_size(PARSE_STACK_BYTES)
        except (ValueError, RuntimeError):  # a platform that cannot: parse inline
            return cst.parse_module(source)
        try:
            worker = threading.Thread(target=work, name="numcheck-libcst-parse", daemon=True)
            worker.start()
        finally:
            threading.stack_size(previous)
    worker.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def _analyse_module(
    source: str, ctx: FileContext, line_offset: int, col_offset: int, deep: bool = False
) -> list[tuple[RawFinding, CodeRange, CodeRange, int, int]]:
    module = parse_module(source, deep)
    analyzer = FunctionAnalyzer(module, ctx)
    found = analyzer.run_module()
    return _positions(module, found, line_offset, col_offset)


def _analyse_unit(
    source: str, unit: Unit, ctx: FileContext, deep: bool = False
) -> list[tuple[RawFinding, CodeRange, CodeRange, int, int]]:
    all_lines = source.splitlines(keepends=True)
    chunk = all_lines[unit.start_line - 1 : unit.end_line]
    indent = unit.indent
    dedented: list[str] = []
    for text in chunk:
        if text[:indent].strip() and text.strip():
            return _analyse_function_in_module(source, unit, ctx, deep)
        dedented.append(text[indent:] if len(text) > indent else text.lstrip(" \t"))
    snippet = "".join(dedented)
    try:
        module = parse_module(snippet, deep)
    except cst.ParserSyntaxError:
        return _analyse_function_in_module(source, unit, ctx, deep)
    func = next((s for s in module.body if isinstance(s, cst.FunctionDef)), None)
    if func is None:
        return []
    analyzer = FunctionAnalyzer(module, ctx, unit.cls)
    found = analyzer.run_function(func, unit.name)
    return _positions(module, found, unit.start_line - 1, indent)


def _analyse_function_in_module(
    source: str, unit: Unit, ctx: FileContext, deep: bool = False
) -> list[tuple[RawFinding, CodeRange, CodeRange, int, int]]:
    """Slow path for a function whose text cannot stand alone (odd indentation)."""
    module = parse_module(source, deep)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    positions = wrapper.resolve(PositionProvider)
    for node, code_range in positions.items():
        if (
            isinstance(node, cst.FunctionDef)
            and code_range.start.line <= unit.start_line + 20
            and code_range.end.line == unit.end_line
            and node.name.value == unit.name.rsplit(".", 1)[-1]
        ):
            analyzer = FunctionAnalyzer(module, ctx, unit.cls)
            found = analyzer.run_function(node, unit.name)
            return [(f, positions[f.node], positions[f.stmt], 0, 0) for f in found]
    return []


def _positions(
    module: cst.Module, found: list[RawFinding], line_offset: int, col_offset: int
) -> list[tuple[RawFinding, CodeRange, CodeRange, int, int]]:
    if not found:
        return []
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    return [
        (f, positions[f.node], positions.get(f.stmt, positions[f.node]), line_offset, col_offset)
        for f in found
    ]


def is_test_file(path: str) -> bool:
    """pytest's and unittest's conventions: a `tests`/`test` folder, `test_*.py`, `*_test.py`,
    `conftest.py`."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "test") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def on_constants(item: RawFinding, modules: Collection[str]) -> bool:
    """The operand is written from literals alone (`torch.log(torch.tensor([0.0, 1.0]))`,
    `x / np.array(0.0)`): its range is known at both ends and no variable feeds it. In a test
    that is an input chosen on purpose (often the edge case itself), not a risk a caller can
    reach, so such findings in test files are not reported."""
    interval = item.interval
    if interval is None or not (math.isfinite(interval.lo) and math.isfinite(interval.hi)):
        return False
    try:
        tree = ast.parse(item.operand.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return False
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id not in modules
            and node.id not in ("float", "int", "abs", "min", "max")
        ):
            return False  # a variable, or a method called on one
    return True


def _occurrences(raw: list[tuple[RawFinding, CodeRange, CodeRange, int, int]]) -> list[int]:
    """For each raw finding, how many findings of the same rule, op, call text and function
    come before it in the file (before any is filtered out, so the count does not depend on
    which lines changed)."""
    order = sorted(
        range(len(raw)),
        key=lambda i: (raw[i][1].start.line + raw[i][3], raw[i][1].start.column + raw[i][4]),
    )
    seen: dict[tuple[str, str, str, str], int] = {}
    counts = [0] * len(raw)
    for i in order:
        item = raw[i][0]
        key = (item.rule, item.op, normalise_call(item.call), item.function)
        counts[i] = seen.get(key, 0)
        seen[key] = counts[i] + 1
    return counts


def _finalise(
    raw: list[tuple[RawFinding, CodeRange, CodeRange, int, int]],
    path: str,
    config: Config,
    lines: frozenset[int] | None,
    suppressions: Suppressions,
    scan: FileScan,
    modules: Collection[str] = (),
    tree: ast.Module | None = None,
    source_lines: list[str] | None = None,
) -> list[Finding]:
    best: dict[tuple[int, str], tuple[Finding, int]] = {}
    in_tests = is_test_file(path)
    occurrences = _occurrences(raw)
    for index, (item, where, stmt_where, line_offset, col_offset) in enumerate(raw):
        line = where.start.line + line_offset
        stmt_line = stmt_where.start.line + line_offset
        fed_by = None
        if lines is not None and line not in lines:
            rule = RULES_BY_ID.get(item.rule)
            fed_by = (
                feeding_line(
                    tree,
                    source_lines or [],
                    line,
                    item.operand,
                    rule is not None and rule.definite,
                    lines,
                )
                if tree is not None
                else None
            )
            if fed_by is None:
                continue
        if in_tests and on_constants(item, modules):
            continue
        if suppressions.match(item.op, (line, stmt_line)) is not None:
            scan.suppressed += 1
            continue
        severity = config.severity_for(item.op, RULE_SEVERITY.get(item.rule, "warning"))
        interval = (
            IntervalInfo(item.interval.lo, item.interval.hi, config.dtype)
            if item.interval is not None and not item.interval.unknown
            else None
        )
        finding = Finding(
            path=path,
            line=line,
            column=where.start.column + col_offset,
            end_line=where.end.line + line_offset,
            end_column=where.end.column + col_offset,
            function=item.function,
            op=item.op,
            framework=item.framework,
            call=item.call,
            operand=item.operand,
            why=item.why,
            rule=item.rule,
            severity=severity,  # type: ignore[arg-type]
            interval=interval,
            suggestion=item.suggestion or None,
            fed_by=fed_by,
            op_wrapper=tree is not None
            and is_op_wrapper(tree, line, item.call, item.operand, item.op),
            fingerprint=make_fingerprint(
                path, item.rule, item.op, item.call, item.function, occurrences[index]
            ),
        )
        if fed_by is not None:
            finding.why += (
                f" Line {line} is unchanged; line {fed_by} of this change feeds its operand."
            )
        rank = RULE_RANK.get(item.rule, 0)
        key = (line, item.op)
        if key not in best or rank < best[key][1]:
            best[key] = (finding, rank)
    return sorted((f for f, _ in best.values()), key=lambda f: (f.line, f.column, f.op))
