"""The dependencies a repository declares, read without running any of its code.

The dynamic pass imports the PR's modules; most real repositories import something numcheck's
own environment lacks (`tqdm`, `einops`, `chex`, `decorator`), and the finding then ends in
"no entry reaches the op". `runners/dependencies.py` installs what is declared here. Reading
is static on purpose: `setup.py` is parsed, never executed, since it is the PR's code.

Read at the checkout's root:
- `pyproject.toml`: `[project] dependencies`, its `test`/`tests`/`testing` extras, and Poetry's
  `[tool.poetry.dependencies]`;
- `setup.cfg`: `[options] install_requires` and the same extras;
- `setup.py`: the `install_requires=` and `extras_require=` arguments of `setup()`, where they
  are literals or module-level names bound to literals (strings, f-strings of such names, lists,
  tuples, `+`);
- `requirements*.txt` and `requirements/*.txt`: one requirement per line; files for other
  purposes than running the code (`requirements-docs.txt`, `requirements/lint.txt`,
  `requirements-jax-cuda.txt`) are not read.

Only plain PEP 508 requirements are kept: a name, extras, version specifiers and a marker.
What could make pip fetch from elsewhere or build code is refused with a reason: URLs and
local paths, `-e`, `-r`/`-c` includes, index and other pip options.

A checkout that declares nothing (a folder of training scripts, a tutorial) gets the packages
its Python files import instead: top-level `import x` and `from x import y`, less the
standard library and its own modules, each named by its distribution (`sklearn` is
scikit-learn). `runners/dependencies.py` then drops those numcheck's interpreter already
imports. This gives the PR author no more than a requirements file would: the same index,
wheels only, nothing run at install time.

Some modules came with every Python environment and no longer do: `pkg_resources` left
setuptools in its release 81, and real code written before still imports it (torchmetrics'
`utilities/imports.py` did). A checkout that imports one gets the last release that had it
(`PROVIDED_ONCE`), whatever else it declares; `runners/dependencies.py` installs it only where
numcheck's interpreter cannot import the module.
"""

from __future__ import annotations

import ast
import configparser
import os
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

TEST_EXTRAS = ("test", "tests", "testing")
# Requirement files for other jobs than running the code: documentation, linters, notebooks,
# accelerator builds (a CUDA wheel of a framework the worker already has).
OTHER_PURPOSES = (
    "doc",
    "lint",
    "style",
    "format",
    "typing",
    "mypy",
    "notebook",
    "example",
    "benchmark",
    "release",
    "publish",
    "cuda",
    "gpu",
    "tpu",
    "rocm",
)
MAX_FILE_BYTES = 256 * 1024  # a declaration file larger than this is not a declaration
MAX_REQUIREMENTS = 200
MAX_SCANNED = 500  # Python files read for their imports, when nothing is declared
MAX_IMPORTED = 30  # packages taken from imports
# Import names whose distribution on the index is named otherwise; None: not one package
IMPORTED_AS: dict[str, str | None] = {
    "PIL": "pillow",
    "cv2": "opencv-python-headless",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "yaml": "pyyaml",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "google": None,
    "mpl_toolkits": None,
    "pkg_resources": None,
    "setuptools": None,
    "IPython": "ipython",
    "tensorflow": None,
    "torch": None,
    "jax": None,
    "jaxlib": None,
    "numpy": None,
}
NOT_FROM_THE_INDEX = "a URL or path requirement; only packages from the index are installed"
# Modules environments once provided and numcheck's may not: the requirement that still does.
PROVIDED_ONCE = {"pkg_resources": "setuptools<81"}


@dataclass
class Declared:
    """What the checkout declares: `requirements` as (requirement text, file it came from),
    `rejected` as (line, file, why), and the project's own distribution names (never
    installed from the index: the checkout is the project)."""

    requirements: list[tuple[str, str]] = field(default_factory=list)
    rejected: list[tuple[str, str, str]] = field(default_factory=list)
    project_names: set[str] = field(default_factory=set)
    # requirements taken from imports (nothing was declared): requirement -> module imported
    imported: dict[str, str] = field(default_factory=dict)
    # requirements for a module the checkout imports that environments once provided
    # (PROVIDED_ONCE): requirement -> that module
    provides: dict[str, str] = field(default_factory=dict)
    # the top-level modules the checkout's files import (`_imports`), declared or not
    modules: set[str] = field(default_factory=set)

    def add(self, text: str, source: str) -> None:
        line = text.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            return
        if line.startswith("-"):
            self.rejected.append((line, source, "pip options and includes are not followed"))
            return
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            self.rejected.append((line, source, f"not a plain requirement ({exc})"))
            return
        if requirement.url:
            self.rejected.append((line, source, NOT_FROM_THE_INDEX))
            return
        if len(self.requirements) >= MAX_REQUIREMENTS:
            self.rejected.append((line, source, f"more than {MAX_REQUIREMENTS} requirements"))
            return
        self.requirements.append((str(requirement), source))

    def imported_names(self) -> set[str]:
        """Canonical distribution names of what the code imports: a requirement among them
        is one the code needs, not a tool of its authors (`sphinx`, `twine`)."""
        return {
            canonicalize_name(name)
            for module in self.modules
            for name in (module, IMPORTED_AS.get(module) or module)
        }

    def names(self) -> list[str]:
        return sorted({canonicalize_name(Requirement(text).name) for text, _ in self.requirements})


def declared_requirements(root: Path) -> Declared:
    declared = Declared()
    for name, reader in (
        ("pyproject.toml", _pyproject),
        ("setup.cfg", _setup_cfg),
        ("setup.py", _setup_py),
    ):
        text = _read(root / name)
        if text is not None:
            reader(text, name, declared)
    for path in sorted([*root.glob("requirements*.txt"), *root.glob("requirements/*.txt")]):
        if any(word in path.stem.lower() for word in OTHER_PURPOSES):
            continue
        text = _read(path)
        if text is not None:
            source = path.relative_to(root).as_posix()
            for line in text.splitlines():
                declared.add(line, source)
    own = {canonicalize_name(n) for n in declared.project_names}
    declared.requirements = [
        (text, source)
        for text, source in declared.requirements
        if canonicalize_name(Requirement(text).name) not in own
    ]
    imports = _imports(root)
    declared.modules = set(imports)
    if not declared.requirements and not declared.rejected:
        _imported(imports, declared)
    for module, requirement in PROVIDED_ONCE.items():
        if module in imports:
            declared.requirements.append((requirement, f"import {module} in {imports[module]}"))
            declared.provides[requirement] = module
    return declared


def _imports(root: Path) -> dict[str, str]:
    """The top-level modules the checkout's Python files import (MAX_SCANNED files, the
    project's own code before its examples, scripts, docs and tests: a library's modules
    need what they import, an example's imports are the example's), less the standard
    library and its own modules: module -> the first file that imports it."""
    files: list[Path] = []
    local: set[str] = set()
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        local.update(dirs)
        for name in sorted(names):
            if name.endswith(".py"):
                local.add(name[:-3])
                files.append(Path(folder) / name)
    files.sort(key=lambda path: _auxiliary(path.relative_to(root)))  # stable: path order
    found: dict[str, str] = {}
    for path in files[:MAX_SCANNED]:
        text = _read(path)
        try:
            tree = ast.parse(text or "")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for module in _top_level_imports(tree):
            if (
                module not in found
                and module not in local
                and module not in sys.stdlib_module_names
            ):
                found[module] = path.relative_to(root).as_posix()
    return found


# Folders whose files are not the project's own code but what surrounds it
AUXILIARY_FOLDERS = frozenset(
    {
        "benchmark",
        "benchmarks",
        "doc",
        "docs",
        "example",
        "examples",
        "notebooks",
        "scripts",
        "test",
        "testing",
        "tests",
        "tutorials",
    }
)


def _auxiliary(relative: Path) -> bool:
    return any(part.lower() in AUXILIARY_FOLDERS for part in relative.parts[:-1])


def _imported(imports: dict[str, str], declared: Declared) -> None:
    """The packages the checkout's Python files import, as requirements (see the module's
    docstring); the first file that imports each is its source."""
    for module, path in imports.items():
        distribution = IMPORTED_AS.get(module, module)
        if distribution is None or len(declared.imported) >= MAX_IMPORTED:
            continue
        try:
            requirement = str(Requirement(distribution))
        except InvalidRequirement:
            continue
        declared.requirements.append((requirement, f"import {module} in {path}"))
        declared.imported[requirement] = module


def _top_level_imports(tree: ast.AST) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module.split(".")[0])
    return names


def _read(path: Path) -> str | None:
    try:
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _pyproject(text: str, source: str, declared: Declared) -> None:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return
    project: dict[str, Any] = data["project"] if isinstance(data.get("project"), dict) else {}
    if isinstance(project.get("name"), str):
        declared.project_names.add(project["name"])
    for item in _strings(project.get("dependencies")):
        declared.add(item, source)
    extras = project.get("optional-dependencies")
    if isinstance(extras, dict):
        for extra in TEST_EXTRAS:
            for item in _strings(extras.get(extra)):
                declared.add(item, source)
    poetry = data.get("tool", {}).get("poetry") if isinstance(data.get("tool"), dict) else None
    if isinstance(poetry, dict):
        if isinstance(poetry.get("name"), str):
            declared.project_names.add(poetry["name"])
        deps = poetry.get("dependencies")
        for name, spec in deps.items() if isinstance(deps, dict) else ():
            if isinstance(spec, dict) and {"git", "path", "url"} & spec.keys():
                declared.rejected.append(
                    (f"{name} (a git, path or URL source)", source, NOT_FROM_THE_INDEX)
                )
            elif name.lower() != "python":
                declared.add(_poetry_requirement(name, spec), source)


def _poetry_requirement(name: str, spec: Any) -> str:
    """`torch = "^2.0"` and `{version = "~1.2"}` as PEP 508; a caret or tilde keeps its lower
    bound only (the resolver still has to pick a release that fits numcheck's environment)."""
    version = spec.get("version") if isinstance(spec, dict) else spec
    if not isinstance(version, str) or version.strip() in ("", "*"):
        return name
    version = version.strip()
    if version[0] in "^~" and not version.startswith("~="):
        return f"{name}>={version.lstrip('^~')}"
    if version[0].isdigit():
        return f"{name}=={version}"
    return f"{name}{version}"


def _setup_cfg(text: str, source: str, declared: Declared) -> None:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return
    if parser.has_option("metadata", "name"):
        declared.project_names.add(parser.get("metadata", "name").strip())
    if parser.has_option("options", "install_requires"):
        for line in parser.get("options", "install_requires").splitlines():
            declared.add(line, source)
    if parser.has_section("options.extras_require"):
        for extra in TEST_EXTRAS:
            if parser.has_option("options.extras_require", extra):
                for line in parser.get("options.extras_require", extra).splitlines():
                    declared.add(line, source)


def _setup_py(text: str, source: str, declared: Declared) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    names: dict[str, Any] = {}
    for node in tree.body:  # module-level `NAME = literal`, in order
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        ):
            value = _literal(node.value, names)
            if value is not None:
                names[node.targets[0].id] = value
    for call in ast.walk(tree):
        if not (isinstance(call, ast.Call) and _called(call) == "setup"):
            continue
        for keyword in call.keywords:
            value = _literal(keyword.value, names)
            if keyword.arg == "name" and isinstance(value, str):
                declared.project_names.add(value)
            elif keyword.arg == "install_requires":
                for item in _strings(value):
                    declared.add(item, source)
            elif keyword.arg == "extras_require" and isinstance(value, dict):
                for extra in TEST_EXTRAS:
                    for item in _strings(value.get(extra)):
                        declared.add(item, source)


def _called(node: ast.Call) -> str:
    func = node.func
    return (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )


def _literal(node: ast.AST, names: dict[str, Any], depth: int = 0) -> Any:
    """A literal's value, or None: strings, f-strings of known names, lists and tuples, dicts
    with string keys, names bound earlier, and `+` of two of these. Nothing is evaluated."""
    if depth > 20:
        return None
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            part = _literal(
                value.value if isinstance(value, ast.FormattedValue) else value, names, depth + 1
            )
            if not isinstance(part, str):
                return None
            parts.append(part)
        return "".join(parts)
    if isinstance(node, ast.List | ast.Tuple):
        items = [_literal(e, names, depth + 1) for e in node.elts]
        return None if any(i is None for i in items) else items
    if isinstance(node, ast.Dict):
        out = {}
        for key, value in zip(node.keys, node.values, strict=True):
            k = _literal(key, names, depth + 1) if key is not None else None
            if isinstance(k, str):
                out[k] = _literal(value, names, depth + 1)
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _literal(node.left, names, depth + 1), _literal(node.right, names, depth + 1)
        if isinstance(left, list) and isinstance(right, list):
            return left + right
        if isinstance(left, str) and isinstance(right, str):
            return left + right
    return None


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [line for line in re.split(r"[\r\n]+", value) if line.strip()]
    if isinstance(value, list | tuple):
        return [item for item in value if isinstance(item, str)]
    return []
