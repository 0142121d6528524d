"""Real repositories for verification tests, built as git mirrors from a real package.

The package is ``sortedcontainers`` (pure Python, 4 modules, 4,265 lines, installed here as
a dependency of hypothesis), copied from this environment into each layout Python projects
use, with two real-looking bugs planted in ``SortedList`` (``count`` off by one within a
sublist, ``__contains__`` comparing by identity). Each repository is a git mirror holding
one base commit; its SWE-bench row has the gold ``patch`` (both fixes), a ``test_patch``
that adds tests to an existing test file, and FAIL_TO_PASS / PASS_TO_PASS ids as SWE-bench
stores them (cut at the first whitespace of a parametrised id).

Layouts: ``flat`` (package at the root, tests/ without ``__init__``, setup.py + setup.cfg,
a symlink, ids with real newlines), ``src`` (src/ + pyproject.toml; the tests read the
project's metadata and entry points), ``inside`` (tests inside the package),
``test_package`` (a ``test`` package with its conftest and a helper module imported as
``test.helpers``), ``tests_package`` (a ``tests``
package with a relative import), ``namespace`` (``acme.sortedcontainers`` under src/,
``acme`` a PEP 420 namespace package). ``big`` is ``src`` plus generated modules (a
repository of ``extra_files`` more files).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import sortedcontainers

SOURCE = Path(sortedcontainers.__file__).parent
MODULES = ("__init__.py", "sortedlist.py", "sortedset.py", "sorteddict.py")
COUNT_OK = "        if pos_left == pos_right:\n            return idx_right - idx_left\n"
COUNT_BUG = "        if pos_left == pos_right:\n            return idx_right - idx_left - 1\n"
CONTAINS_OK = "        return _lists[pos][idx] == value\n\n"
CONTAINS_BUG = "        return _lists[pos][idx] is value\n\n"
LAYOUTS = ("flat", "src", "inside", "test_package", "tests_package", "namespace")


def _layout(name: str) -> dict[str, Any]:
    """Where the package and tests go, and how the tests import the package."""
    pkg, tests, module = "sortedcontainers", "tests", "sortedcontainers"
    extra: dict[str, str] = {}
    init = False
    if name == "flat":
        extra = {
            "setup.py": "from setuptools import setup\n\nsetup(name='sortedcontainers', "
            "version='2.4.0')\n",
            "setup.cfg": "[tool:pytest]\n"
            "disable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n",
        }
    elif name in ("src", "big"):
        pkg = "src/sortedcontainers"
        extra = {
            "pyproject.toml": '[project]\nname = "sortedcontainers-fixture"\n'
            'version = "2.4.0.post7"\n\n[project.entry-points."fixture.kinds"]\n'
            'list = "sortedcontainers:SortedList"\n\n'
            '[tool.setuptools.package-dir]\n"" = "src"\n'
        }
    elif name == "inside":
        tests, init = "sortedcontainers/tests", True
    elif name == "test_package":
        tests, init = "test", True
        extra = {"test/helpers.py": "def sample():\n    return [5, 1, 4, 2, 3]\n"}
    elif name == "tests_package":
        tests, init = "tests", True
        extra = {"tests/helpers.py": "def sample():\n    return [5, 1, 4, 2, 3]\n"}
    elif name == "namespace":
        pkg, module = "src/acme/sortedcontainers", "acme.sortedcontainers"
        extra = {"setup.cfg": "[metadata]\nname = acme.sortedcontainers\nversion = 1.0\n"}
    else:
        raise ValueError(name)
    return {"pkg": pkg, "tests": tests, "module": module, "init": init, "extra": extra}


def _visible_tests(name: str, module: str) -> str:
    sample = {
        "tests_package": "from .helpers import sample\n",
        "test_package": "from test.helpers import sample\n",  # the stdlib's name, absolute
    }.get(name, "\n\ndef sample():\n    return [5, 1, 4, 2, 3]\n")
    text = (
        f"import pytest\n\nfrom {module} import SortedList, SortedSet, SortedDict\n{sample}\n\n"
        "def test_add(values):\n    sl = SortedList(values)\n    sl.add(0)\n"
        "    assert list(sl) == [0, 1, 2, 3, 4, 5]\n\n\n"
        "def test_len():\n    assert len(SortedList(sample())) == 5\n\n\n"
        "def test_set_and_dict():\n    assert list(SortedSet([3, 1, 3])) == [1, 3]\n"
        "    assert list(SortedDict({'b': 1, 'a': 2})) == ['a', 'b']\n\n\n"
        '@pytest.mark.parametrize("words", ["b a", "c"])\n'
        "def test_strings(words):\n    assert list(SortedList(words.split()))"
        " == sorted(words.split())\n"
    )
    if name == "flat":
        text += (
            "\n\ndef test_link_kept():\n    import os\n\n"
            "    assert os.path.islink('tests/readme.txt')\n"
            "    assert open('tests/readme.txt').read().startswith('sorted')\n"
        )
    if name == "src":
        text += (
            "\n\ndef test_installed_metadata():\n    from importlib import metadata\n\n"
            "    assert metadata.version('sortedcontainers-fixture') == '2.4.0.post7'\n"
            "    kinds = metadata.entry_points(group='fixture.kinds')\n"
            "    assert [e.load() for e in kinds] == [SortedList]\n"
        )
    return text


HIDDEN_TESTS = (
    "\n\ndef test_count_duplicates():\n    assert SortedList([1, 2, 2, 3, 3, 3]).count(2) == 2\n\n\n"
    '@pytest.mark.parametrize("v", [2.0, 10**20], ids=["two float", "big\\nint"])\n'
    "def test_contains_equal(v):\n    sl = SortedList([1, 2, 3, int('1' + '0' * 20)])\n"
    "    assert v in sl\n"
)
CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef values():\n    return [5, 1, 4, 2, 3]\n"


def _git(root: Path, *args: str) -> str:
    command = ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args]
    return subprocess.run(command, cwd=root, capture_output=True, text=True, check=True).stdout


def base_files(name: str, extra_files: int = 0) -> tuple[dict[str, str], dict[str, Any]]:
    """The base commit's files of ``name`` (bugs planted), and the layout."""
    lay = _layout(name)
    files: dict[str, str] = {"README.rst": "sortedcontainers, laid out as " + name + "\n"}
    for mod in MODULES:
        text = (SOURCE / mod).read_text()
        if mod == "sortedlist.py":
            assert COUNT_OK in text and CONTAINS_OK in text
            text = text.replace(COUNT_OK, COUNT_BUG).replace(CONTAINS_OK, CONTAINS_BUG, 1)
        files[f"{lay['pkg']}/{mod}"] = text
    tests = lay["tests"]
    if lay["init"]:
        files[f"{tests}/__init__.py"] = ""
    files[f"{tests}/conftest.py"] = CONFTEST
    files[f"{tests}/test_sortedlist.py"] = _visible_tests(name, lay["module"])
    files.update(lay["extra"])
    for i in range(extra_files):  # a repository of real size: many small modules
        files[f"src/sortedcontainers/_gen/m{i // 100:03d}/mod{i:05d}.py"] = (
            f'"""Generated module {i}."""\n\n\ndef value():\n    return {i}\n'
        )
    return files, lay


def build(mirrors: Path, name: str, extra_files: int = 0) -> dict[str, Any]:
    """A git mirror of layout ``name`` under ``mirrors`` and its SWE-bench row (with the
    half-reverted patch as ``half_patch`` and the layout's test file as ``test_file``)."""
    files, lay = base_files(name, extra_files)
    root = mirrors / f"acme__sorted-{name}"
    root.mkdir(parents=True)
    for path, text in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    if name == "flat":
        os.symlink("../README.rst", root / "tests" / "readme.txt")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "base")
    base = _git(root, "rev-parse", "HEAD").strip()
    src = root / lay["pkg"] / "sortedlist.py"
    buggy = src.read_text()
    src.write_text(buggy.replace(COUNT_BUG, COUNT_OK).replace(CONTAINS_BUG, CONTAINS_OK, 1))
    patch = _git(root, "diff")
    src.write_text(buggy.replace(CONTAINS_BUG, CONTAINS_OK, 1))  # the count fix left out
    half = _git(root, "diff")
    _git(root, "checkout", "--", ".")
    test_file = f"{lay['tests']}/test_sortedlist.py"
    (root / test_file).write_text(files[test_file] + HIDDEN_TESTS)
    test_patch = _git(root, "diff")
    _git(root, "checkout", "--", ".")
    fail_to_pass = [
        f"{test_file}::test_count_duplicates",
        f"{test_file}::test_contains_equal[two",  # "[two float]" as SWE-bench stores it
    ]
    # pytest escapes a newline in an id unless the project says not to (flat's setup.cfg):
    # then SWE-bench's log line, and so its stored id, stops at the newline.
    fail_to_pass.append(
        f"{test_file}::test_contains_equal[big"
        if name == "flat"
        else f"{test_file}::test_contains_equal[big\\nint]"
    )
    pass_to_pass = [
        f"{test_file}::test_add",
        f"{test_file}::test_len",
        f"{test_file}::test_set_and_dict",
        f"{test_file}::test_strings[b",  # "[b a]"
        f"{test_file}::test_strings[c]",
    ]
    if name == "flat":
        pass_to_pass.append(f"{test_file}::test_link_kept")
    if name == "src":
        pass_to_pass.append(f"{test_file}::test_installed_metadata")
    return {
        "instance_id": f"acme__sorted-{name}-1",
        "repo": f"acme/sorted-{name}",
        "base_commit": base,
        "patch": patch,
        "test_patch": test_patch,
        "problem_statement": "SortedList.count undercounts; `2.0 in SortedList([2])` is False.",
        "FAIL_TO_PASS": json.dumps(fail_to_pass),  # as SWE-bench ships them: JSON text
        "PASS_TO_PASS": pass_to_pass,
        "half_patch": half,
        "test_file": test_file,
        "pkg": lay["pkg"],
    }


def row_of(built: dict[str, Any]) -> dict[str, Any]:
    """The SWE-bench row alone (without the test helpers' own keys)."""
    return {k: v for k, v in built.items() if k not in ("half_patch", "test_file", "pkg")}
