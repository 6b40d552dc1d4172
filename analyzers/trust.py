"""Which findings a pull request shows as inline review comments, and what is held back.

A comment that is not proven is noise to the person reading the diff: the static pass flags
every operand it cannot prove safe, and on real code most of those are safe by construction in
ways no interval sees. So, by default (`comment_on = "proven"`), a finding becomes an inline
comment only when

* the dynamic pass confirmed it: a concrete input made the op produce NaN/Inf, and the comment
  carries the reproducer; or
* its rule is *definite* (`Rule.definite` in `analyzers/static/rules.py`): the finding is a
  fact of the code whatever the inputs (an epsilon that rounds away, a guard whose result is
  discarded, log(softmax(x)), a -inf fill reaching a softmax), and it is not in a test file.
  A test's inputs are the test's own choice, often a reference formula written plainly on
  purpose (`np.log(1 + np.exp(x))` next to the softplus it checks), so a definite pattern there
  says nothing about code users run; read by hand on real pull requests, such comments were
  noise. Confirmed, it is still commented.

A confirmed finding is still held back when its proof cancels the code's own epsilon guard
(`cancels_guard`): the operand is written `a + eps`, the op fails at or below 0, and the input
box was numcheck's choice, not a configured entry's declared bounds. Such an operand reaches
0 only when `a` goes below -eps, so the trigger had to make negative a value the author's
epsilon says never is. Read by hand on real pull requests, those proofs were noise (load
balance divided by `mean(load) + 1e-10`, confirmed with negative example counts). The
finding keeps its reproducer in the check run, and it does not fail the check.

A confirmed finding is held back too when its function is the op under another name (`def
safe_sqrt(x): return jnp.sqrt(x)`: named for the op, its body only the op on a parameter;
`Finding.op_wrapper`) and numcheck made up the call: what
the wrapper's operand can be is each caller's choice, so such a proof shows only the op's own
domain (sqrt of a negative number); read by hand on a real pull request, both were noise, the
callers passing squared distances.

A confirmed finding is held back as well when numcheck made up the call and the trigger,
minimised, still needs a *constant* the code is handed at a value numcheck chose: a float
attribute of a parameter the body only reads attributes of (`force_field.par_16`,
`InputSpec.attribute`, analyzers/dynamic/namespaces.py), left nonzero (`rests_on_constants`).
Such a proof shows what the formula does for a configuration nobody wrote: read by hand on a
real pull request (jax-md's ReaxFF terms, `exp(-force_field.par_16 * x)`), nearly all were
exponentials of decay constants given the wrong sign. A trigger that needs the constants only
at 0 (`1 / gamma` with a shielding of 0, a `where` whose radius is 0) stays a comment.

A proof found on a call numcheck made up, after the repository's own tests called the same
function and the search from their recorded values stayed finite, is *not* held back: the
comment says so (`box.recorded_held`, runners/harness.py), because on real pull requests such
proofs held back that way were two real bugs the tests' values do not reach (kornia's focal
losses, whose tests pass only non-negative logits) and no noise.

Everything else (`potential`, `not-triggered`, `error`) is *held back*: it stays in the check
run (a notice annotation and a collapsed list), in the Action's notices and in every
`--format`, and the review says how many were held back and why. `comment_on = "potential"`
restores the older behaviour of commenting on every finding.

A *candidate* (`Rule.candidate`: an operand of unknown provenance, flagged so the dynamic pass
tries it) is commented only once confirmed, under either policy, and until then does not make
an exit status fail (`counts`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from analyzers.catalogue import CATALOGUE
from analyzers.dtypes import precision_failure
from analyzers.epsilon import guarded_part
from analyzers.model import Finding
from analyzers.static.rules import RULES_BY_ID
from analyzers.static.scanner import is_test_file

DEFAULT_COMMENT_ON = "proven"

# Why a finding of each status was not worth an inline comment, in the reader's words.
HELD_BACK_WHY = {
    "potential": "not proven: the code was not run, or no entry reached the op",
    "not-triggered": "not proven: the search found no input that makes NaN/Inf",
    "error": "not proven: the code could not be run as far as the op",
    "test-file": "a definite pattern, but in a test file, whose inputs are the test's own",
    "guard-cancelled": "confirmed only by making negative the part an epsilon guards "
    "(`a` in `a + eps`), which the epsilon says is never negative",
    "op-wrapper": "confirmed only on made-up inputs to a function that is the op under "
    "another name: its callers choose the operand",
    "made-up-constant": "confirmed only on a made-up call that sets constants the code is "
    "handed (a parameter's attributes) to values numcheck chose",
    "test-made-up": "confirmed only on a made-up call to a function in a test file, whose "
    "inputs are the test's own",
}


def comment_on(config: Mapping[str, Any]) -> str:
    """The policy a result was produced under; results written before the key existed, and
    hand-built ones, get the default."""
    value = config.get("comment_on")
    return value if value in ("proven", "potential") else DEFAULT_COMMENT_ON


def is_definite(finding: Finding) -> bool:
    rule = RULES_BY_ID.get(finding.rule)
    return rule is not None and rule.definite


def is_candidate(finding: Finding) -> bool:
    """A suspicion too weak to show unless confirmed (`Rule.candidate`)."""
    rule = RULES_BY_ID.get(finding.rule)
    return rule is not None and rule.candidate


def is_proven(finding: Finding) -> bool:
    return finding.status == "confirmed"


def cancels_guard(finding: Finding) -> bool:
    """Was this finding confirmed only by cancelling its operand's epsilon (see the module's
    docstring)? Not for a definite rule (an epsilon that rounds away is the finding itself),
    nor for a trigger inside a configured entry's bounds, which the user declared real, nor
    for a precision finding: the same inputs are finite in float32, so the guard holds there
    and what fails is the low precision."""
    spec = CATALOGUE.by_op.get(finding.op)
    box = (finding.trigger or {}).get("box") or {}
    return (
        is_proven(finding)
        and not is_definite(finding)
        and spec is not None
        and spec.requires in ("positive", "nonzero")
        and box.get("source") != "config"
        and guarded_part(finding.operand) is not None
        and not is_precision_finding(finding)
    )


def proves_only_the_op(finding: Finding) -> bool:
    """Confirmed by calling, on inputs numcheck made up, a function that only applies the op
    to its parameter (see the module's docstring); a configured or recorded call is the
    code's own and counts, as does a definite rule."""
    box = (finding.trigger or {}).get("box") or {}
    return (
        finding.op_wrapper
        and is_proven(finding)
        and not is_definite(finding)
        and box.get("source") == "synthesised"
    )


def rests_on_constants(finding: Finding) -> bool:
    """Confirmed on a call numcheck made up by a minimised trigger that still sets a float
    input standing for a parameter's attribute to something other than 0 (see the module's
    docstring). A recorded or configured call's values are the code's own and count."""
    trigger = finding.trigger or {}
    box = trigger.get("box") or {}
    if not is_proven(finding) or is_definite(finding) or box.get("source") != "synthesised":
        return False
    specs, values = box.get("inputs") or [], trigger.get("inputs") or []
    if len(specs) != len(values):
        return False
    return any(
        isinstance(spec, dict)
        and spec.get("attribute")
        and str(spec.get("dtype", "")).startswith(("float", "bfloat"))
        and isinstance(value, dict)
        and _nonzero(value)
        for spec, value in zip(specs, values, strict=True)
    )


def _nonzero(value: Mapping[str, Any]) -> bool:
    """Does a trigger's input summary (runners/harness._summary: values in full, or the
    range of a large one) hold anything but 0?"""
    if "values" in value:
        stack = [value["values"]]
        while stack:
            item = stack.pop()
            if isinstance(item, list):
                stack.extend(item)
            elif item != 0:
                return True
        return False
    return value.get("min", 0) != 0 or value.get("max", 0) != 0


def is_precision_finding(finding: Finding) -> bool:
    """Confirmed in float16 or bfloat16 on inputs that are finite in float32
    (analyzers/dynamic/precision.py)."""
    return is_proven(finding) and precision_failure(finding.trigger) is not None


def proves_a_tests_helper(finding: Finding) -> bool:
    """Confirmed on a call numcheck made up to a function in a test file (a test's NumPy
    reference of an optimizer step, `1 - beta1 ** (t + 1)` at beta1 = 1): what that function
    is called with is the test's own choice, as a definite pattern's inputs are there. Read by
    hand on Keras's pull request, such a proof was noise. A call the tests themselves made is
    theirs, and counts."""
    box = (finding.trigger or {}).get("box") or {}
    return (
        is_proven(finding)
        and not is_definite(finding)
        and is_test_file(finding.path)
        and box.get("source") == "synthesised"
    )


def is_credible_proof(finding: Finding) -> bool:
    """Confirmed, by a trigger a reader would accept: what is commented inline and what a
    check that fails on confirmed findings (`check_failure`, the Action's `fail-on`) fails on."""
    return (
        is_proven(finding)
        and not cancels_guard(finding)
        and not proves_only_the_op(finding)
        and not rests_on_constants(finding)
        and not proves_a_tests_helper(finding)
    )


def comment_inline(finding: Finding, policy: str) -> bool:
    """May this finding be an inline review comment under `policy`? A candidate only once
    confirmed, whatever the policy; a proof that cancels an epsilon guard or proves only a
    wrapped op's domain, under neither."""
    if is_proven(finding):
        return is_credible_proof(finding)
    if is_candidate(finding):
        return False
    return policy == "potential" or (is_definite(finding) and not is_test_file(finding.path))


def held_back_reason(finding: Finding) -> str:
    """The key in `HELD_BACK_WHY` that says why `finding` is not inline."""
    if is_definite(finding) and is_test_file(finding.path) and finding.status == "potential":
        return "test-file"
    if cancels_guard(finding):
        return "guard-cancelled"
    if proves_only_the_op(finding):
        return "op-wrapper"
    if rests_on_constants(finding):
        return "made-up-constant"
    if proves_a_tests_helper(finding):
        return "test-made-up"
    return finding.status


def counts(finding: Finding) -> bool:
    """Does the finding count toward a failing exit status (`fail_on`)? Not a candidate that
    was not confirmed: it is a question for the dynamic pass, not a finding yet."""
    return is_proven(finding) or not is_candidate(finding)


def held_back(findings: Iterable[Finding], policy: str) -> list[Finding]:
    return [f for f in findings if not comment_inline(f, policy)]


def held_back_sentence(findings: Iterable[Finding], policy: str) -> str | None:
    """'3 findings held back from inline comments (comment_on = "proven"): 2 potential (...),
    1 not-triggered (...).', or None when nothing was held back."""
    kept = held_back(findings, policy)
    if not kept:
        return None
    by_reason = Counter(held_back_reason(f) for f in kept)
    order = list(HELD_BACK_WHY)
    parts = [
        f"{n} {status} ({HELD_BACK_WHY.get(status, 'not proven')})"
        for status, n in sorted(
            by_reason.items(),
            key=lambda item: (order.index(item[0]) if item[0] in order else len(order), item[0]),
        )
    ]
    noun = "finding" if len(kept) == 1 else "findings"
    return (
        f"{len(kept)} {noun} held back from inline comments "
        f'(comment_on = "{policy}"): {", ".join(parts)}.'
    )


def proving_order(findings: Iterable[Finding]) -> list[Finding]:
    """The order the sandbox tries `findings` in: what a proof would turn into an inline
    comment first, then candidates, then findings in test files; within each, one finding
    of every file in turn before a file's second.

    The sandboxed run has one wall clock for the whole pull request (`dynamic_timeout`), and
    a finding it does not reach stays an error. On a large pull request (Keras brought into
    its own repository: 237 findings) the clock runs out long before the last finding, and in
    the order of the diff one file with 31 findings and the tests that follow it took the
    time of the code under review. A proof in a test file is worth least: a test's inputs are
    its own choice. Taking files in turn keeps one long file from starving the rest."""
    tiers: dict[int, dict[str, list[Finding]]] = {}
    for finding in findings:
        tier = 2 if is_test_file(finding.path) else 1 if is_candidate(finding) else 0
        tiers.setdefault(tier, {}).setdefault(finding.path, []).append(finding)
    ordered: list[Finding] = []
    for tier in sorted(tiers):
        queues = list(tiers[tier].values())
        for turn in range(max(len(q) for q in queues)):
            ordered += [queue[turn] for queue in queues if turn < len(queue)]
    return ordered
