"""The README's promises: CI runs its test command verbatim, and its Python example runs."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


def _indented_commands() -> list[str]:
    return [line.strip() for line in README.splitlines() if line.startswith("    pip install")]


def test_readme_opens_with_two_commands_and_ci_runs_the_test_command_verbatim():
    main_job, tests = _indented_commands()[:2]
    assert "sege-cvx reproduce" in main_job
    assert "pytest" in tests
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert tests in ci_lines


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "README.md", "exec"), {})


def test_ci_runs_every_benchmark_quick():
    # CI's loop runs `python <script> --quick` for these globs; each script must define it.
    ci = (ROOT / ".ci" / "run").read_text()
    assert "benchmarks/bench_*.py benchmarks/measure_*.py" in ci and "--quick" in ci
    scripts = sorted((ROOT / "benchmarks").glob("*.py"))
    runnable = [p for p in scripts if not p.name.startswith("_")]
    assert {p.name for p in runnable} == {
        p.name for p in scripts if p.name.startswith(("bench_", "measure_"))}
    for path in runnable:
        assert '"--quick"' in path.read_text(), f"{path.name} has no --quick"


def test_the_api_reference_lists_every_public_name():
    import sege_cvx

    # A submodule (sege_cvx.testing) is listed by its functions: "testing.check_policy".
    listed = {name.split(".")[0] for name in
              re.findall(r"^   ([\w.]+)$", (ROOT / "docs" / "api.rst").read_text(), flags=re.M)}
    assert listed == set(sege_cvx.__all__)
