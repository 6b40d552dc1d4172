"""docs/ops.md and docs/configuration.md are generated from the code (`python -m
analyzers.docs`): the committed pages must be what the generator writes today, cover every op
and every key, and every example in them must load. And the repository is self-contained: no
tracked file names a file outside it."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from analyzers import docs
from analyzers.catalogue import CATALOGUE, KNOWN_OPS
from analyzers.config import (
    _KEYS,
    CONFIG_KEYS,
    ENTRY_KEY_SPECS,
    ENTRY_KEYS,
    REQUIRED,
    SCRIPT_KEY_SPECS,
    SCRIPT_KEYS,
    Config,
    ConfigError,
    config_from_mapping,
)
from analyzers.dtypes import DTYPES, round_to
from analyzers.fix.kinds import fix_order, rank

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def test_committed_docs_are_current() -> None:
    stale = docs.stale(DOCS)
    assert stale == [], (
        f"stale: {', '.join(stale)}; run `.venv/bin/python -m analyzers.docs` and commit docs/"
    )


def test_check_command_fails_on_a_stale_page_and_write_fixes_it(tmp_path: Path) -> None:
    """The one command, as a user runs it: --check exits 1 naming the page, a plain run
    rewrites it, and --check passes afterwards."""
    out = tmp_path / "docs"
    command = [sys.executable, "-m", "analyzers.docs", "--out", str(out)]
    first = subprocess.run([*command, "--check"], capture_output=True, text=True, cwd=ROOT)
    assert first.returncode == 1
    assert "ops.md is stale" in first.stderr and "configuration.md is stale" in first.stderr
    written = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert written.returncode == 0, written.stderr
    assert (out / "ops.md").read_text(encoding="utf-8") == docs.ops_markdown()
    assert subprocess.run([*command, "--check"], cwd=ROOT).returncode == 0
    (out / "configuration.md").write_text("edited by hand\n", encoding="utf-8")
    again = subprocess.run([*command, "--check"], capture_output=True, text=True, cwd=ROOT)
    assert again.returncode == 1
    assert "configuration.md is stale" in again.stderr and "ops.md" not in again.stderr


# ---------------------------------------------------------------- ops.md


def _op_section(text: str, op: str) -> str:
    match = re.search(rf"^### `{re.escape(op)}`\n(.*?)(?=^### |^## |\Z)", text, re.S | re.M)
    assert match, f"no section for {op}"
    return match.group(1)


def test_ops_page_covers_every_op_name_and_fix() -> None:
    text = docs.ops_markdown()
    assert set(re.findall(r"^### `([^`]+)`$", text, re.M)) == set(KNOWN_OPS)
    for spec in CATALOGUE.entries:
        section = _op_section(text, spec.op)
        assert f"kind: {spec.kind}" in section
        for framework, name in spec.qualnames():
            assert f"`{name}`" in section, (spec.op, name)
            assert framework in section
        for method in spec.methods:
            assert f"`.{method}()`" in section
        for fix in spec.fixes:  # every fix the catalogue lists is one a transform makes
            makers = [e for e in fix_order(spec) if e.kind == fix.kind]
            assert makers, f"{spec.op}: no transform makes the catalogue's {fix.kind} fix"
            generic = [e for e in makers if not e.shows]
            if generic:  # shown by the catalogue's template
                assert f"({generic[0].function.__name__}): `{fix.template}`" in section
        if spec.forward_invalid:
            assert spec.forward_invalid in section


def test_ops_page_lists_fixes_in_the_order_the_fix_stage_ranks_them() -> None:
    """The list is read from the registry the fix stage runs, ranked by the same function
    (`kinds.rank`, what candidates() sorts by): a catalogue order the code does not follow
    cannot reach the page. For log the stable APIs come before the epsilon."""
    text = docs.ops_markdown()
    for spec in CATALOGUE.entries:
        entries = fix_order(spec)
        names = re.findall(r"^\d+\. [a-z-]+ \((t_[a-z0-9_]+)\)", _op_section(text, spec.op), re.M)
        assert list(dict.fromkeys(names)) == [e.function.__name__ for e in entries], spec.op
        ranks = [min(rank(e.kind, n) for n in e.names) for e in entries]
        assert ranks == sorted(ranks), spec.op
    log = [e.function.__name__ for e in fix_order(CATALOGUE.by_op["log"])]
    assert log.index("t_log_softmax") < log.index("t_epsilon") < log.index("t_clamp")
    assert "t_float32_eps" not in [
        e.function.__name__ for e in fix_order(CATALOGUE.by_op["softmax"])
    ]


def test_ops_page_states_the_invalid_domain_per_dtype() -> None:
    text = docs.ops_markdown()
    exp = _op_section(text, "exp")
    for dtype, limits in DTYPES.items():
        assert f"| {dtype} | x > {limits.exp_max:.6g} |" in exp
    assert "| float16 | x > 11.0899 |" in exp  # exp overflows above 11.09 in float16
    cosh = _op_section(text, "cosh")
    assert re.search(r"\| float32 \| \\\|x\\\| > 89\.41", cosh)  # |x| escaped in the table
    log = _op_section(text, "log")
    assert (
        "| float16 | x <= 0 (-inf at 0, NaN below); 0 < \\|x\\| ≤ 2.98023e-08 is stored "
        "as 0 |" in log
    )


@pytest.mark.parametrize("dtype", [d for d in DTYPES if d != "float64"])
def test_the_rounding_the_ops_page_states_is_what_the_dtype_does(dtype: str) -> None:
    """The per-dtype bounds on the page are facts about rounding: check them against
    analyzers.dtypes.round_to, which the tests check against torch."""
    limits = DTYPES[dtype]
    zero = docs.rounds_to_zero_below(limits)
    assert round_to(zero, dtype) == 0.0
    assert round_to(zero * 1.5, dtype) != 0.0
    below, above = docs.rounds_to_one_within(limits)
    assert round_to(1 - below, dtype) == 1.0
    assert round_to(1 - below * 1.5, dtype) < 1.0
    assert round_to(1 + above, dtype) == 1.0
    assert round_to(1 + above * 1.5, dtype) > 1.0
    assert round_to(-1 + below, dtype) == -1.0


# ---------------------------------------------------------------- configuration.md


def test_every_key_the_parser_accepts_is_documented_and_nothing_else() -> None:
    text = docs.configuration_markdown()
    documented = set(re.findall(r"^### `([^`]+)`$", text, re.M))
    top = {k for k in documented if "." not in k}
    assert top == set(_KEYS)
    assert {k.split(".", 1)[1] for k in documented if k.startswith("entries.")} == set(ENTRY_KEYS)
    assert {k.split(".", 1)[1] for k in documented if k.startswith("script.")} == set(SCRIPT_KEYS)
    with pytest.raises(ConfigError, match="unknown key 'undocumented'"):
        config_from_mapping({"undocumented": 1})
    with pytest.raises(ConfigError, match="unknown key 'undocumented'"):
        config_from_mapping({"entries": [{"target": "m:f", "undocumented": 1}]})


def _load(snippet: str) -> Config:
    table = tomllib.loads(snippet)["tool"]["numcheck"]
    return config_from_mapping(table, "the example", known_ops=KNOWN_OPS)


@pytest.mark.parametrize(
    "spec",
    [*CONFIG_KEYS, *ENTRY_KEY_SPECS, *SCRIPT_KEY_SPECS],
    ids=lambda s: f"{s.table}.{s.name}".lstrip("."),
)
def test_every_example_loads_and_sets_its_key(spec: docs.KeySpec) -> None:
    example = docs.key_example(spec)
    assert f"```toml\n{example}\n```" in docs.configuration_markdown()
    config = _load(example)
    raw = tomllib.loads(example)["tool"]["numcheck"]
    if spec.table == "entries":
        (entry,) = config.entries
        assert entry[spec.name] == raw["entries"][0][spec.name]
    elif spec.table == "script":
        assert config.script is not None
        value = raw["script"][spec.name]
        got = config.script[spec.name]
        if spec.name == "command":
            assert list(got) == value.split()
        elif spec.name == "bounds":
            assert {k: list(v) for k, v in got.items()} == value
        else:
            assert got == value
    elif spec.name == "extend_exclude":
        assert config.exclude[-len(raw[spec.name]) :] == tuple(raw[spec.name])
    elif spec.name in ("entries", "script"):
        assert config.to_json()[spec.name] not in (None, [])
    else:
        assert config.to_json()[spec.name] == raw[spec.name]
        assert raw[spec.name] != Config().to_json()[spec.name], "an example shows a change"


def test_documented_defaults_are_the_parsers() -> None:
    text = docs.configuration_markdown()
    defaults = Config().to_json()
    for spec in CONFIG_KEYS:
        section = re.search(rf"^### `{spec.name}`\n(.*?)(?=^### |^## |\Z)", text, re.S | re.M)
        assert section, spec.name
        line = next(ln for ln in section.group(1).splitlines() if ln.startswith("- default:"))
        if spec.name in ("exclude",):
            assert "default excludes" in line
        elif spec.name == "extend_exclude":
            assert line == "- default: `[]`"
        elif defaults[spec.name] is None:
            assert line == "- default: not set"
        else:
            assert line == f"- default: `{docs.toml_value(defaults[spec.name])}`"
    # script mode: the loader's defaults are the documented ones
    script = _load('[tool.numcheck.script]\ncommand = "train.py"').script
    assert script is not None
    for spec in SCRIPT_KEY_SPECS:
        if spec.default_value() is REQUIRED:
            assert f"### `script.{spec.name}`" in text and "- default: required" in text
            continue
        value = script[spec.name]
        assert (dict(value) if spec.name == "bounds" else value) == spec.default_value()
        assert f"`{docs.toml_value(spec.default_value())}`" in text


def test_readme_links_the_reference_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/ops.md" in readme and "docs/configuration.md" in readme


# ---------------------------------------------------------------- one house

# What a clone from GitHub does not have: the design and numerics notes and the `shared`
# folder beside the repository, and paths of one machine. Written as regular expressions, so
# this file does not match itself.
OUTSIDE = (
    r"\bDESIGN\.md",
    r"\bNUMERICS\.md",
    r"\.\./shared\b",
    r"\bshared/github-webhooks",
    r"[\"']shared[\"']",  # as a path part in code
    r"(?<![\w.~/-])/(?:work|root)/",
)


def test_the_repository_names_nothing_outside_it() -> None:
    """No tracked file cites or reads a file outside the repository: docs/architecture.md and
    docs/numerics.md hold the design and the facts, tests/fixtures/ the webhook payloads."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    pattern = re.compile("|".join(OUTSIDE))
    hits = []
    for name in listed.stdout.decode().split("\0"):
        path = ROOT / name
        if not name or not path.is_file():
            continue
        text = path.read_bytes().decode("utf-8", "replace")
        hits += [
            f"{name}:{n}: {line.strip()}"
            for n, line in enumerate(text.splitlines(), 1)
            if pattern.search(line)
        ]
    assert hits == [], "names files outside the repository:\n" + "\n".join(hits)
