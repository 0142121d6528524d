"""Java (OpenJDK 17): javac inside the sandbox, the classes packed into one jar, then ``java``.

A build collects one file, so the class files go into ``main.jar`` (zipped with the sandbox's
Python, which starts in a fraction of the time the ``jar`` tool's JVM does). The source file is
named after its public top-level type, as javac demands, and the launched class is the
top-level type that declares ``main``.

JVM flags keep a run small and quick to start inside the limits: the serial collector (no GC
threads, the smallest footprint), no perf-data file in /tmp, class-data sharing, and a small
initial heap so the heap grows with the program's live data instead of starting at 1/64 of the
host's memory. (G1, the default, starts ~30 ms of CPU faster on JDK 17 thanks to its archived
heap, but grows its heap so eagerly that a program with 10 MB of live data churning garbage
dies at a 128 MB limit; serial keeps it under 40 MB.) The JVM cannot see the run's cgroup (there is no /sys in the sandbox) and the
language does not know the run's limits, so the heap cap is fixed and generous: a program that
outgrows its memory limit ends as ``memory_limit`` (the cgroup), not as an OutOfMemoryError.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from .. import defaults
from .base import Build, Program, tool_version
from .native import COMPILE_LIMITS

JAR = "main.jar"

#: Flags for the javac JVM: C1 only and serial GC make a short-lived compiler ~30% cheaper;
#: annotation processing is off (no processor lookup on the class path).
JAVAC_FLAGS: tuple[str, ...] = (
    "-J-XX:+UseSerialGC",
    "-J-XX:TieredStopAtLevel=1",
    "-J-XX:-UsePerfData",
    "-J-Xshare:auto",
    "-proc:none",
    "-implicit:none",
    "-encoding",
    "UTF-8",
)

#: Flags for every run. Full tiered compilation stays on: C1 alone starts ~10 ms faster but
#: runs heavy loops ~40% slower. The heap free ratios keep the committed heap within ~1.5x of
#: the live data (a 60 MB working set fits a 128 MB limit); the heap cap stays below 32 GiB so
#: compressed object pointers (and the CDS archive) still apply. ``-Xss`` matches the
#: sandbox's stack limit (recursive solutions are common); ``-ea`` because MultiPL-E style
#: tests use ``assert`` statements. JVM warnings (such as a failed thread start) go to stderr,
#: not to stdout where they would corrupt the program's output.
JAVA_FLAGS: tuple[str, ...] = (
    "-Xlog:disable",
    "-Xlog:all=warning:stderr:uptime,level,tags",
    "-XX:+UseSerialGC",
    "-XX:-UsePerfData",
    "-Xshare:auto",
    "-Xms8m",
    "-Xmx16g",
    "-XX:MinHeapFreeRatio=10",
    "-XX:MaxHeapFreeRatio=30",
    f"-Xss{defaults.STACK_MB}m",
    "-ea",
)

_TYPE_DECL = re.compile(
    r"\b((?:(?:public|protected|private|abstract|final|static|strictfp|sealed|non-sealed)\s+)*)"
    r"(class|interface|enum|record)\s+([A-Za-z_$][\w$]*)"
)
_SCAN = re.compile(rf"{_TYPE_DECL.pattern}|[{{}}]")
MAIN = re.compile(r"\bstatic\s+(?:final\s+)?void\s+main\s*\(")
_SKIPPED = re.compile(
    r'"""[\s\S]*?"""|//[^\n]*|/\*[\s\S]*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\''
)


def blank_literals(source: str) -> str:
    """``source`` with comments and string/char literals replaced by spaces (same offsets),
    so braces and keywords inside them do not confuse the scans below."""
    return _SKIPPED.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), source)


@dataclass(frozen=True, slots=True)
class TypeDecl:
    """A class/interface/enum/record declaration found in Java source."""

    #: Source-level name, nested types qualified (``Outer.Inner``).
    name: str
    public: bool
    top_level: bool
    #: Offset of the first modifier, of the ``class`` keyword, and one past the closing brace.
    start: int
    keyword: int
    end: int

    @property
    def binary_name(self) -> str:
        """The name ``java`` launches (``Outer$Inner``)."""
        return self.name.replace(".", "$")


def type_decls(source: str) -> list[TypeDecl]:
    """Every named type declared in ``source`` (local types inside methods included), in
    source order; a light brace scan, not a parser, which is all file naming and the test
    harness need."""
    text = blank_literals(source)
    stack: list[int | None] = []  # one entry per open brace: index of the type it opens
    pending: int | None = None
    found: list[TypeDecl] = []
    for match in _SCAN.finditer(text):
        token = match.group()
        if token == "{":
            stack.append(pending)
            pending = None
        elif token == "}":
            opened = stack.pop() if stack else None
            if opened is not None:
                found[opened] = replace(found[opened], end=match.end())
        else:
            outer = [found[i].name for i in stack if i is not None]
            public = "public" in match.group(1).split()
            found.append(
                TypeDecl(
                    ".".join([*outer, match.group(3)]),
                    public,
                    not stack,
                    match.start(),
                    match.start(2),
                    len(text),
                )
            )
            pending = len(found) - 1
    return found


def enclosing(decls: list[TypeDecl], offset: int) -> TypeDecl | None:
    """The innermost declared type whose text contains ``offset``."""
    inside = [d for d in decls if d.start <= offset < d.end]
    return max(inside, key=lambda d: d.start) if inside else None


def main_class(source: str) -> str:
    """The class to launch: the public top-level type if it declares ``main``, else the first
    type that does, else the public type, else ``Main``."""
    decls = type_decls(source)
    owners = [enclosing(decls, m.start()) for m in MAIN.finditer(blank_literals(source))]
    with_main = [d for d in owners if d is not None]
    for decl in with_main:
        if decl.public and decl.top_level:
            return decl.binary_name
    if with_main:
        return with_main[0].binary_name
    return next((d.name for d in decls if d.public and d.top_level), "Main")


def file_name(source: str) -> str:
    """javac requires a public top-level type to live in ``<Name>.java``."""
    public = next((d.name for d in type_decls(source) if d.public and d.top_level), None)
    return f"{public or main_class(source).split('$')[0]}.java"


class Java:
    """javac + java from the host's OpenJDK (``/usr/bin``)."""

    name = "java"
    extensions: tuple[str, ...] = (".java",)

    def toolchain(self) -> str:
        flags = " ".join(JAVA_FLAGS)
        return f"java:{tool_version('javac')}:{tool_version('java')}:{flags}"

    def build(self, source: bytes) -> Build:
        src = file_name(source.decode(errors="replace"))
        javac = " ".join(["/usr/bin/javac", *JAVAC_FLAGS, "-d", "classes", src])
        script = (
            f"mkdir classes && {javac} && cd classes && /usr/bin/python3 -m zipfile -c ../{JAR} *"
        )
        return Build(["/bin/sh", "-c", script], [(src, source, 0o644)], JAR, COMPILE_LIMITS)

    def program(self, source: bytes, artifact: bytes | None) -> Program:
        assert artifact is not None
        cls = main_class(source.decode(errors="replace"))
        argv = ["/usr/bin/java", *JAVA_FLAGS, "-cp", f"{defaults.WORK_DIR}/{JAR}", cls]
        return Program("exec", argv, [(JAR, artifact, 0o644)])
