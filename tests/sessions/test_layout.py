"""Repository layouts read from the task's files: import roots, own module names, the
project's metadata as an editable install leaves it, pytest commands."""

from __future__ import annotations

from assay.sessions._layout import (
    has_pytest_config,
    import_roots,
    own_modules,
    project_metadata,
    pytest_command,
)


def test_import_roots() -> None:
    assert import_roots({"pkg/__init__.py": b""}) == [""]
    assert import_roots({"src/pkg/__init__.py": b""}) == ["", "src"]
    declared = {
        "lib/pkg/__init__.py": b"",
        "pyproject.toml": b'[tool.setuptools.package-dir]\n"" = "lib"\n',
    }
    assert import_roots(declared) == ["", "lib"]
    assert import_roots(
        {"setup.cfg": b"[options]\npackage_dir =\n    =code\n", "code/m.py": b""}
    ) == [
        "",
        "code",
    ]


def test_own_modules_include_namespace_and_test_helpers() -> None:
    files = {"src/acme/lib/core.py": b"", "tests/helpers.py": b"", "README.md": b""}
    assert own_modules(files) == {"src", "acme", "lib", "core", "tests", "helpers"}


def test_metadata_of_pyproject_and_setup_py() -> None:
    meta = project_metadata(
        {
            "pyproject.toml": b'[project]\nname = "my-pkg"\nversion = "1.2"\n'
            b'[project.scripts]\nmy = "my_pkg:main"\n'
        },
        [""],
    )
    assert meta["site/my_pkg-1.2.dist-info/METADATA"].startswith(b"Metadata-Version")
    assert meta["site/my_pkg-1.2.dist-info/entry_points.txt"] == (
        b"[console_scripts]\nmy = my_pkg:main\n\n"
    )
    from_setup = project_metadata(
        {
            "setup.py": b"from setuptools import setup\nsetup(name='old')\n",
            "old/__init__.py": b"__version__ = '0.3'\n",
        },
        [""],
    )
    assert list(from_setup) == ["site/old-0.3.dist-info/METADATA"]
    assert project_metadata({"a.py": b""}, [""]) == {}


def test_pytest_config_and_commands() -> None:
    assert has_pytest_config({"setup.cfg": b"[tool:pytest]\naddopts = -q\n"})
    assert not has_pytest_config({"pyproject.toml": b"[project]\nname = 'x'\n"})
    assert pytest_command("python -m pytest -q tests") == (".", ["-q", "tests"])
    assert pytest_command("cd sub && PYTHONWARNINGS=ignore pytest -x") == ("sub", ["-x"])
    assert pytest_command("pytest tests && echo done") is None
    assert pytest_command("make test") is None
