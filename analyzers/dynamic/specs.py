"""Input specs and the valid box: `float32[8,16] in [-100, 100]`.

The box bounds every value the search may try, and it is stated in every comment, so a reader
can judge whether the trigger is realistic (docs/architecture.md, "The dynamic pass").
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

# config: the repository's bounds; observed: what the code was seen to pass, widened tenfold;
# widened: an observed box that did not trigger, opened to the default box; default: numcheck's
# "resized": a default box with its dimensions cut (sizes.py)
BoxSource = Literal["config", "observed", "widened", "default", "resized"]
DEFAULT_LO, DEFAULT_HI = -100.0, 100.0
FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")
INT_DTYPES = ("int64", "int32", "bool")

_SPEC = re.compile(
    r"^\s*(?P<dtype>[a-z0-9]+)\s*\[(?P<shape>[0-9,\s]*)\]\s*"
    r"(?:in\s*\[\s*(?P<lo>[-+0-9.eEinf]+)\s*,\s*(?P<hi>[-+0-9.eEinf]+)\s*\])?\s*$"
)


class SpecError(ValueError):
    """An input spec that cannot be read; the message shows the accepted form."""


@dataclass(frozen=True)
class InputSpec:
    dtype: str
    shape: tuple[int, ...]
    lo: float
    hi: float
    source: BoxSource = "config"
    # the values were recorded from the repository's own calls, whose sign means something (a
    # count, a distance, a log-probability): widening keeps an observed box on its side of 0
    keeps_sign: bool = False
    # the attribute of a parameter this input stands for (`force_field.par_16`, namespaces.py):
    # a constant the code is handed, not data it computes; a proof on a made-up call that
    # needs such a constant at a value numcheck chose is held back (analyzers/trust.py)
    attribute: str = ""

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOAT_DTYPES

    def describe(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        return f"{self.dtype}[{dims}] in [{self.lo:g}, {self.hi:g}]"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "dtype": self.dtype,
            "shape": list(self.shape),
            "lo": self.lo,
            "hi": self.hi,
            "source": self.source,
        }
        if self.keeps_sign:  # said only where it holds: a recorded value's box
            out["keeps_sign"] = True
        if self.attribute:
            out["attribute"] = self.attribute
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> InputSpec:
        return cls(
            data["dtype"],
            tuple(data["shape"]),
            float(data["lo"]),
            float(data["hi"]),
            data.get("source", "config"),
            bool(data.get("keeps_sign", False)),
            str(data.get("attribute", "")),
        )


def parse_spec(text: str, source: BoxSource = "config") -> InputSpec:
    match = _SPEC.match(text)
    if match is None:
        raise SpecError(
            f"cannot read input spec {text!r}; write it as "
            "'float32[8,16] in [-100, 100]' (dtype[shape] in [lo, hi])"
        )
    dtype = match["dtype"]
    if dtype not in FLOAT_DTYPES + INT_DTYPES:
        raise SpecError(
            f"unknown dtype {dtype!r} in {text!r}; use one of "
            f"{', '.join(FLOAT_DTYPES + INT_DTYPES)}"
        )
    shape = tuple(int(d) for d in match["shape"].replace(" ", "").split(",") if d)
    if match["lo"] is None:
        lo, hi, source = (
            (0.0, 1.0, "default") if dtype == "bool" else (DEFAULT_LO, DEFAULT_HI, "default")
        )
    else:
        try:
            lo, hi = float(match["lo"]), float(match["hi"])
        except ValueError:
            raise SpecError(
                f"cannot read the bounds in {text!r}; write numbers, as in "
                "'float32[8] in [-1.5, 2e3]'"
            ) from None
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise SpecError(f"the box in {text!r} must be finite: the search samples it")
    if lo > hi:
        raise SpecError(f"empty box in {text!r}: {lo:g} > {hi:g}")
    return InputSpec(dtype, shape, lo, hi, source)


def widened(spec: InputSpec) -> InputSpec | None:
    """The next, wider box for an observed float input: its range joined with the default box,
    or None when there is nothing to widen (a configured box is the repository's word; an
    integer input's range is its meaning: ids, lengths, offsets).

    A box that `keeps_sign` widens in magnitude only: the tests' non-negative counts stay
    non-negative and their log-probabilities stay non-positive, so a proof never rests on a
    sign the code was not seen with. Values that are stand-ins (a script's `torch.rand`
    logits) do not keep their sign: there the sign is the draw's, not the code's."""
    if spec.source != "observed" or not spec.is_float:
        return None
    lo, hi = min(spec.lo, DEFAULT_LO), max(spec.hi, DEFAULT_HI)
    if spec.keeps_sign and spec.lo >= 0.0:
        lo = spec.lo
    elif spec.keeps_sign and spec.hi <= 0.0:
        hi = spec.hi
    if (lo, hi) == (spec.lo, spec.hi):
        return None
    return InputSpec(spec.dtype, spec.shape, lo, hi, "widened", spec.keeps_sign)


# the (batch, features) shape a tensor parameter gets when nothing says otherwise
DEFAULT_SHAPE = (4, 8)


def default_spec(shape: tuple[int, ...] = DEFAULT_SHAPE, dtype: str = "float32") -> InputSpec:
    """What a synthesised entry assumes when nothing says otherwise."""
    return InputSpec(dtype, shape, DEFAULT_LO, DEFAULT_HI, "default")
