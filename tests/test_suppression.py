"""Parsing and matching `# numcheck: ignore/fixme` comments."""

from __future__ import annotations

import textwrap

import pytest

from analyzers.static.suppression import Suppression, SuppressionHit, Suppressions


def parse(source: str) -> Suppressions:
    return Suppressions.from_source(textwrap.dedent(source))


def test_ignore_single_op() -> None:
    sup = parse("y = torch.log(x)  # numcheck: ignore[log]\n")
    assert sup.problems == []
    assert sup.entries == [Suppression(line=1, column=18, kind="ignore", ops=("log",))]
    assert sup.match("log", [1]) == SuppressionHit(kind="ignore", line=1, ops=("log",))
    assert sup.match("sqrt", [1]) is None
    assert sup.match("log", [2]) is None


def test_ignore_several_ops() -> None:
    sup = parse("y = a / torch.sqrt(b)  # numcheck: ignore[div, sqrt ,div]\n")
    assert sup.entries[0].ops == ("div", "sqrt")
    assert sup.match("div", [1]) is not None
    assert sup.match("sqrt", [1]) is not None
    assert sup.match("log", [1]) is None


def test_bare_ignore_covers_every_op() -> None:
    sup = parse("y = torch.log(x) / z  # numcheck: ignore\n")
    assert sup.entries[0].ops == ()
    hit = sup.match("anything", [1])
    assert hit == SuppressionHit(kind="ignore", line=1, ops=())


def test_fixme_is_recorded_as_debt() -> None:
    sup = parse("y = torch.log(x)  # numcheck: fixme[log] -- clamp once the loader is fixed\n")
    hit = sup.match("log", [1])
    assert hit is not None and hit.kind == "fixme" and hit.ops == ("log",)
    bare = parse("y = torch.log(x)  # numcheck: fixme\n")
    bare_hit = bare.match("exp", [1])
    assert bare_hit is not None and bare_hit.kind == "fixme"


def test_statement_first_line_counts() -> None:
    source = """\
    loss = torch.log(  # numcheck: ignore[log]
        probs,
    )
    other = (
        torch.sqrt(v)
    )
    """
    sup = parse(source)
    # The finding is on line 2; its statement starts on line 1.
    assert sup.match("log", [2, 1]) == SuppressionHit("ignore", 1, ("log",))
    assert sup.match("sqrt", [5, 4]) is None


def test_comment_inside_multiline_call() -> None:
    source = """\
    y = f(
        torch.log(p),  # numcheck: ignore[log]
    )
    """
    assert parse(source).match("log", [2, 1]) is not None


def test_hash_in_string_is_not_a_comment() -> None:
    source = '''\
    msg = "# numcheck: ignore[log]"
    doc = """
    # numcheck: ignore
    """
    y = torch.log(x)
    '''
    sup = parse(source)
    assert sup.entries == []
    assert sup.problems == []
    assert sup.match("log", [1, 2, 3, 4, 5]) is None


def test_own_line_comment_applies_to_its_line_only() -> None:
    sup = parse("# numcheck: ignore[log]\ny = torch.log(x)\n")
    assert sup.match("log", [2]) is None
    assert sup.match("log", [1]) is not None


def test_shares_a_comment_with_other_tools() -> None:
    sup = parse("y = torch.log(x)  # noqa: E501  # numcheck: ignore[log]  # type: ignore\n")
    assert sup.problems == []
    assert [e.ops for e in sup.entries] == [("log",)]
    two = parse("y = f(x)  # numcheck: ignore[log] # numcheck: fixme[div]\n")
    assert [(e.kind, e.ops) for e in two.entries] == [("ignore", ("log",)), ("fixme", ("div",))]
    hit = two.match("div", [1])
    assert hit is not None and hit.kind == "fixme"


@pytest.mark.parametrize(
    "comment",
    [
        "#numcheck:ignore[log]",
        "#  numcheck :  ignore [ log ]",
        "# NumCheck: IGNORE[log]",
        "# numcheck: ignore[log] because x > 0 here",
        "# numcheck: ignore[torch.log]",
    ],
)
def test_spacing_and_case_variants(comment: str) -> None:
    sup = parse(f"y = torch.log(x)  {comment}\n")
    assert sup.problems == []
    assert len(sup.entries) == 1 and sup.entries[0].kind == "ignore"


@pytest.mark.parametrize(
    "comment",
    [
        "# numcheck: ignore -- reason",
        "# numcheck: ignore (x is positive)",
        "# numcheck: ignore: x is positive",
        "# numcheck: ignore  # noqa",
        "# numcheck: ignore \u2014 x is positive",
    ],
)
def test_bare_directive_with_reason(comment: str) -> None:
    sup = parse(f"y = torch.log(x)  {comment}\n")
    assert sup.problems == []
    assert sup.entries[0].ops == ()


@pytest.mark.parametrize(
    ("comment", "problem"),
    [
        ("# numcheck: ignor[log]", "line 1: unknown directive 'ignor' (did you mean 'ignore'?)"),
        ("# numcheck: fixem[log]", "line 1: unknown directive 'fixem' (did you mean 'fixme'?)"),
        ("# numcheck: silence[log]", "line 1: unknown directive 'silence' (expected 'ignore'"),
        ("# numcheck: ignore[log", "line 1: unclosed '[' in 'ignore[log'"),
        ("# numcheck: ignore[log  # noqa: E501", "line 1: unclosed '[' in 'ignore[log'"),
        ("# numcheck: ignore[]", "line 1: empty op list"),
        ("# numcheck: ignore[log,,div]", "line 1: empty op name"),
        ("# numcheck: ignore[log div]", "line 1: invalid op name 'log div'"),
        ("# numcheck: ignore[1log]", "line 1: invalid op name '1log'"),
        ("# numcheck: ignore log", "line 1: unexpected text 'log' after bare 'ignore'"),
        ("# numcheck: ignore=log", "line 1: unexpected text '=log' after bare 'ignore'"),
        ("# numcheck:", "line 1: expected 'ignore' or 'fixme'"),
        ("# numcheck: [log]", "line 1: expected 'ignore' or 'fixme'"),
        ("# numcheck ignore[log]", "line 1: missing ':' after 'numcheck'"),
    ],
)
def test_malformed_comments_are_problems(comment: str, problem: str) -> None:
    sup = parse(f"y = torch.log(x)  {comment}\n")
    assert sup.entries == []
    assert len(sup.problems) == 1
    assert sup.problems[0].startswith(problem)
    assert sup.match("log", [1]) is None  # a broken directive silences nothing


def test_prose_mentioning_numcheck_is_not_a_problem() -> None:
    sup = parse("# numcheck runs in CI on every PR\n# we use numcheck: see docs\nx = 1\n")
    assert sup.problems == []
    assert sup.entries == []


def test_problem_line_numbers() -> None:
    source = """\
    a = 1
    b = torch.log(a)  # numcheck: ignore[log]
    c = torch.sqrt(b)  # numcheck: ignor[sqrt]
    """
    sup = parse(source)
    assert [e.line for e in sup.entries] == [2]
    assert len(sup.problems) == 1 and sup.problems[0].startswith("line 3: ")


def test_unused_reports_idle_directives_and_ops() -> None:
    source = """\
    a = torch.log(x)  # numcheck: ignore[log, div]
    b = torch.exp(x)  # numcheck: fixme
    c = torch.sqrt(x)  # numcheck: ignore
    d = x / y  # numcheck: ignore[div]
    """
    sup = parse(source)
    assert sup.unused() == sup.entries  # nothing matched yet
    assert sup.match("log", [1]) is not None
    assert sup.match("sqrt", [3]) is not None
    assert sup.match("div", [4]) is not None
    assert sup.unused() == [
        Suppression(line=1, column=18, kind="ignore", ops=("div",)),
        Suppression(line=2, column=18, kind="fixme", ops=()),
    ]


def test_match_prefers_first_line_given_and_marks_only_that_directive() -> None:
    source = """\
    y = f(  # numcheck: ignore[log]
        torch.log(p),  # numcheck: fixme[log]
    )
    """
    sup = parse(source)
    hit = sup.match("log", [2, 1])
    assert hit is not None and (hit.kind, hit.line) == ("fixme", 2)
    assert [e.line for e in sup.unused()] == [1]


def test_duplicate_lines_are_harmless() -> None:
    sup = parse("y = torch.log(x)  # numcheck: ignore[log]\n")
    assert sup.match("log", [1, 1]) is not None
    assert sup.match("log", iter([1])) is not None


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ('x = """never closed\n# numcheck: ignore\n', 1),
        ("y = f(\n    1,  # numcheck: ignore\n", 3),
        ("if x:\n        a = 1  # numcheck: ignore\n    b = 2\n", 3),
    ],
)
def test_untokenizable_source(source: str, line: int) -> None:
    sup = Suppressions.from_source(source)
    assert sup.entries == []
    assert len(sup.problems) == 1
    assert sup.problems[0].startswith(f"line {line}: cannot tokenize source")
    assert sup.match("log", [1, 2, 3]) is None


def test_empty_source() -> None:
    sup = Suppressions.from_source("")
    assert sup.entries == [] and sup.problems == [] and sup.unused() == []


def test_direct_construction_indexes_lines() -> None:
    sup = Suppressions(entries=[Suppression(line=7, column=0, kind="fixme", ops=("exp",))])
    assert sup.match("exp", [7]) == SuppressionHit("fixme", 7, ("exp",))
