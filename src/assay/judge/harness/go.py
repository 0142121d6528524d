"""Go (HumanEval-X): the test is ``func TestXxx(t *testing.T)`` using testify's ``assert``.

The program is one ``_test.go`` file, setup + code + test, built by :mod:`assay.languages.go`
with ``go test -c``, as HumanEval-X runs it (``go test main_test.go``).

Imports are merged the way HumanEval-X's evaluator does, or Go would refuse programs it
accepts: it deletes the prompt's import block (which often repeats the setup's imports, a
"redeclared" error, or imports a package the solution does not use, an "imported and not used"
error) and imports the helper packages the solution uses (``math``, ``strings``, ...). Here the
code's leading imports are kept only if the setup does not already import them and their name
is used outside comments and strings, and missing helper packages the code uses are added.

The harness adds a ``TestMain`` that runs the tests (``m.Run()``) and, only if they passed
*and* every test function ran to its end, prints the marker. The marker was taken off stdin
by the file's first package-level variable, before the submission's initialisers and
``init()`` functions ran, and stdin then pointed at /dev/null. "Ran to
its end" because ``m.Run()`` also returns 0 when no test ran, e.g. if the submission appended
``-test.run=^$`` to ``os.Args`` in an ``init()``: each test function is renamed and called from
a wrapper of the original name that records completion after it returns, which a test left
early (``runtime.Goexit``, a failed ``FailNow``) never does. ``os.Exit`` anywhere (also in
``init()``) ends the program before the marker. The harness's own imports are aliased
(``assay_os`` ...) so they never clash with the submission's; a submission that defines
``TestMain`` itself fails to compile.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The packages HumanEval-X's evaluator imports when the solution uses them (IMPORT_HELPER).
HELPERS = (
    "math",
    "strings",
    "fmt",
    "strconv",
    "time",
    "bytes",
    "regexp",
    "sort",
    "math/rand",
    "crypto/md5",
)

_TRIVIA = re.compile(r"(?:[ \t\r\n]|//[^\n]*|/\*.*?\*/)*", re.DOTALL)
_PACKAGE = re.compile(r"package[ \t]+\w+[ \t]*;?")
_IMPORT = re.compile(r"import\b")
_SPEC = re.compile(r'(?:([A-Za-z_]\w*|\.)[ \t]+)?("(?:[^"\\\n]|\\.)*"|`[^`]*`)')
_NOISE = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:[^\"\\\n]|\\.)*\"|`[^`]*`|'(?:[^'\\\n]|\\.)*'", re.DOTALL
)
_TEST_FUNC = re.compile(r"^func\s+(Test[^a-z]\w*)(\s*\(\s*\w+\s+\*\s*\w+\.T\s*\))", re.MULTILINE)

_HARNESS_IMPORTS = """
import (
    assay_bufio "bufio"
    assay_os "os"
    assay_syscall "syscall"
    assay_testing "testing"
)
"""

#: Declared before any of the submission's code, so it is initialised first (Go initialises
#: package-level variables in declaration order): the marker is taken off stdin and stdin
#: becomes /dev/null before the submission's initialisers and init functions run.
_TAKE = """
var assay_marker = assay_take_marker()

func assay_take_marker() string {
    marker, _ := assay_bufio.NewReader(assay_os.Stdin).ReadString('\\n')
    for len(marker) > 0 && (marker[len(marker)-1] == '\\n' || marker[len(marker)-1] == '\\r') {
        marker = marker[:len(marker)-1]
    }
    if null, err := assay_os.Open("/dev/null"); err == nil {
        _ = assay_syscall.Dup3(int(null.Fd()), 0, 0)
        null.Close()
    }
    return marker
}
"""

_WRAPPER = """
func {name}(t *assay_testing.T) {{
    assay_test_{name}(t)
    assay_completed["{name}"] = true
}}
"""

_DRIVER = """
var assay_completed = map[string]bool{{}}

func TestMain(m *assay_testing.M) {{
    status := m.Run()
    if status != 0 {{
        assay_os.Exit(status)
    }}
    for _, name := range []string{{{names}}} {{
        if !assay_completed[name] {{
            assay_os.Stderr.WriteString("assay: " + name + " did not run to its end\\n")
            assay_os.Exit(1)
        }}
    }}
    assay_os.Stdout.WriteString("\\n" + assay_marker + "\\n")
    assay_os.Exit(0)
}}
"""


@dataclass(frozen=True, slots=True)
class _Import:
    name: str | None
    path: str  # as written, quotes included

    @property
    def bare(self) -> str:
        return self.path[1:-1]

    @property
    def binding(self) -> str:
        """The name the file refers to the package by (the last path element by default)."""
        return self.name or self.bare.rsplit("/", 1)[-1]

    @property
    def standard(self) -> bool:
        """A standard-library path, whose package name is known to be its last element."""
        return "." not in self.bare.split("/", 1)[0]

    def render(self) -> str:
        return f"    {self.name} {self.path}" if self.name else f"    {self.path}"


def _skip(text: str, pos: int) -> int:
    """Past the whitespace and comments at ``pos``."""
    found = _TRIVIA.match(text, pos)
    return found.end() if found else pos


def _header(text: str, package: bool) -> tuple[str, list[_Import], str]:
    """Split Go source into its package clause (if ``package``), its leading import specs and
    the rest. Anything it does not understand stays in the rest, for the compiler to judge."""
    clause, pos = "", 0
    if package:
        start = _skip(text, 0)
        found = _PACKAGE.match(text, start)
        if found:
            clause, pos = text[: found.end()], found.end()
    specs: list[_Import] = []
    while True:
        start = _skip(text, pos)
        if not _IMPORT.match(text, start):
            return clause, specs, text[pos:]
        parsed = _import_decl(text, start + len("import"))
        if parsed is None:
            return clause, specs, text[pos:]
        decl, pos = parsed
        specs += decl


def _import_decl(text: str, pos: int) -> tuple[list[_Import], int] | None:
    """The specs of one import declaration after its keyword, and where it ends."""
    pos = _skip(text, pos)
    grouped = text.startswith("(", pos)
    if grouped:
        pos += 1
    specs: list[_Import] = []
    while True:
        pos = _skip(text, pos)
        if grouped and text.startswith(")", pos):
            return specs, pos + 1
        spec = _SPEC.match(text, pos)
        if spec is None:
            return None
        specs.append(_Import(spec.group(1), spec.group(2)))
        pos = spec.end()
        if text.startswith(";", pos):
            pos += 1
        if not grouped:
            return specs, pos


def _uses(binding: str, code: str) -> bool:
    return re.search(rf"(?<![\w.]){re.escape(binding)}\s*\.\s*[A-Za-z_]", code) is not None


def _merge(setup: list[_Import], code: list[_Import], body: str, test: str) -> list[_Import]:
    """The setup's imports, the code's imports that are new and used, and the helper packages
    the code uses but nobody imports."""
    merged = list(setup)
    seen = {(spec.binding, spec.bare) for spec in setup}
    used_by = _NOISE.sub(" ", body + "\n" + test)
    for spec in code:
        if (spec.binding, spec.bare) in seen:
            continue
        if spec.standard and spec.name not in ("_", ".") and not _uses(spec.binding, used_by):
            continue
        merged.append(spec)
        seen.add((spec.binding, spec.bare))
    bound = {spec.binding for spec in merged}
    solution = _NOISE.sub(" ", body)
    for path in HELPERS:
        helper = _Import(None, f'"{path}"')
        if helper.binding not in bound and _uses(helper.binding, solution):
            merged.append(helper)
            bound.add(helper.binding)
    return merged


def assemble(code: str, test: str, setup: str) -> str:
    names = [m.group(1) for m in _TEST_FUNC.finditer(test)]
    if not names:
        raise ValueError("the Go test declares no `func TestXxx(t *testing.T)`")
    if len(set(names)) != len(names):
        raise ValueError(f"the Go test declares a test function twice: {names}")
    clause, setup_imports, setup_rest = _header(setup, package=True)
    code_clause, code_imports, body = _header(code, package=not clause)
    clause = clause or code_clause or "package main"
    imports = _merge(setup_imports, code_imports, body, test)
    block = "import (\n" + "\n".join(spec.render() for spec in imports) + "\n)\n" if imports else ""
    renamed = _TEST_FUNC.sub(r"func assay_test_\1\2", test)
    wrappers = "".join(_WRAPPER.format(name=name) for name in names)
    driver = _DRIVER.format(names=", ".join(f'"{name}"' for name in names))
    return (
        f"{clause}\n{_HARNESS_IMPORTS}{block}{_TAKE}{setup_rest}\n{body}\n{renamed}\n"
        f"{wrappers}{driver}"
    )
