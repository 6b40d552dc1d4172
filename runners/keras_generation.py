"""Which Keras a checkout's TensorFlow code was written for, Keras 2 or Keras 3.

TensorFlow 2.16 (2024-03-08) made `tf.keras` Keras 3. Keras 3's API differs from Keras 2's
where real code meets it: `Metric.add_weight(name, shape=...)` raises
`got multiple values for argument 'shape'`, the optimizers' `_resource_apply_dense` is
gone, and `tf.keras.backend` lost most of its functions. A repository written before then and
run on today's TensorFlow fails in Keras 3 before its op is reached, so its finding ends in an
error that says nothing about the op. Keras 2 lives on as `tf_keras`, installed beside
Keras 3 (requirements-no-deps.txt); `TF_USE_LEGACY_KERAS=1`, set before TensorFlow is
imported, makes `tf.keras` that package. The harness sets it for a job whose `keras` is "2"
(runners/harness.py), and the reproducer sets it for its reader (analyzers/dynamic/writer.py).

Decided here, on the worker, from what the checkout says, first to last:

1. the repository's configuration, `keras = "2"` or `"3"`;
2. its declared requirements: `tf-keras` means 2; a `keras` requirement that admits no 3.x
   release means 2 and one that admits only 3.x means 3; the same for a `tensorflow`
   requirement and the releases before and from 2.16;
3. the reviewed commit's date: before TensorFlow 2.16 means 2;
4. otherwise 3, the Keras of today's TensorFlow.

Only `tf.keras` changes: `import keras` stays Keras 3 (Keras 2's own `keras` package of
2018 is another API again).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from runners.declared import Declared, declared_requirements

# TensorFlow 2.16.1's release, the first whose `tf.keras` is Keras 3
KERAS_3_DEFAULT_SINCE = datetime(2024, 3, 8, tzinfo=UTC)
# The first release of each package whose `tf.keras` (or whose own API) is Keras 3
KERAS_3_FROM = {"keras": Version("3.0.0"), "tensorflow": Version("2.16.0")}
# Releases asked of a specifier besides the versions it names itself (`==2.11.0`, `<2.16`)
PROBES = {
    "keras": ("2.2.4", "2.4.3", "2.15.0", "3.0.0", "3.12.0"),
    "tensorflow": ("1.15.0", "2.4.0", "2.15.1", "2.16.1", "2.21.0"),
}
TENSORFLOW_NAMES = frozenset({"tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tf-nightly"})
KERAS_2_PACKAGES = frozenset({"tf-keras"})


@dataclass(frozen=True)
class KerasChoice:
    """The Keras for the job ("2" or "3") and which rule chose it (`keras_for`), for a
    reader asking why a run took the Keras it did."""

    version: str
    why: str


def keras_for(
    checkout: Path, configured: str, as_of: datetime | None, declared: Declared | None = None
) -> KerasChoice:
    """The Keras `tf.keras` should be when the checkout's code runs (see the module's
    docstring for the order); `declared`, the checkout's requirements when the caller has
    read them already (the dependency step reads the same)."""
    if configured in ("2", "3"):
        return KerasChoice(configured, f'the configuration says keras = "{configured}"')
    if declared is None:
        try:
            declared = declared_requirements(checkout)
        except (OSError, ValueError):
            declared = None
    if declared is not None:
        if "tf_keras" in declared.modules:
            return KerasChoice("2", "the code imports tf_keras")
        said = from_requirements(text for text, _ in declared.requirements)
        if said is not None:
            return said
    if as_of is not None and as_of.astimezone(UTC) < KERAS_3_DEFAULT_SINCE:
        return KerasChoice(
            "2", f"the commit ({as_of.date().isoformat()}) predates TensorFlow 2.16's Keras 3"
        )
    return KerasChoice("3", "today's TensorFlow: nothing says the code is older")


def from_requirements(requirements: Iterable[str]) -> KerasChoice | None:
    """What declared requirements say of the Keras generation; None when they say nothing
    (no requirement on Keras or TensorFlow, or one that admits both)."""
    for text in requirements:
        try:
            requirement = Requirement(text)
        except ValueError:
            continue
        name = canonicalize_name(requirement.name)
        if name in KERAS_2_PACKAGES:
            return KerasChoice("2", f"the repository declares {text}")
        probe = "tensorflow" if name in TENSORFLOW_NAMES else name
        if probe not in PROBES or not requirement.specifier:
            continue
        admits = _admits(requirement.specifier, probe)
        if admits is not None:
            return KerasChoice(admits, f"the repository declares {text}")
    return None


def _admits(specifier: SpecifierSet, name: str) -> str | None:
    """ "2" when every release of `name` the specifier admits (of the probes and the
    versions it names) is before Keras 3, "3" when every one is from it, None when both or
    none."""
    candidates = {Version(v) for v in PROBES[name]}
    for spec in specifier:
        with contextlib.suppress(InvalidVersion):
            candidates.add(Version(spec.version.removesuffix(".*")))
    admitted = [v for v in candidates if specifier.contains(v, prereleases=True)]
    before = any(v < KERAS_3_FROM[name] for v in admitted)
    after = any(v >= KERAS_3_FROM[name] for v in admitted)
    return "2" if before and not after else "3" if after and not before else None
