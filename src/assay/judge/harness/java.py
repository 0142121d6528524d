"""Java (HumanEval-X, MultiPL-E): the test is a ``static void main`` that throws (an
``AssertionError``, or a failed ``assert``: runs use ``-ea``) when a check fails.

HumanEval-X puts it in ``public class Main``; MultiPL-E inside the prompt's class. The test's
``main`` is renamed, every top-level type loses ``public`` (a file may hold only one public
type), and a new public class calls the renamed method and then echoes the marker. An uncaught
exception ends ``main`` before the marker; ``System.exit`` anywhere earlier ends the JVM before
it. The marker is read from and written to the raw file descriptors, so a submission that
replaced ``System.in``/``System.out`` cannot feed or intercept it, and the JVM is halted right
after, so no shutdown hook or leftover thread can print after it. The JDK types the test
names are imported by name, so the submission cannot shadow them with its own classes.

Not prevented: a submission that returns its own collection type whose ``equals`` always says
yes, when the test compares with ``result.equals(expected)``; or one that reads the marker from
stdin itself.
"""

from __future__ import annotations

import re

from ...languages.java import MAIN, blank_literals, enclosing, type_decls

_RENAMED = "__assayTestMain"

_JAVA_LANG = (
    "AssertionError Boolean Byte Character Double Error Exception Float Integer Iterable Long "
    "Math Number Object RuntimeException Short String StringBuilder System Throwable"
)
_JAVA_UTIL = (
    "ArrayDeque ArrayList Arrays Collection Collections Comparator Deque HashMap HashSet "
    "Iterator LinkedHashMap LinkedHashSet LinkedList List Map Objects Optional PriorityQueue "
    "Queue Random Set Stack TreeMap TreeSet"
)
#: JDK types the datasets' tests name. Each one a test uses is imported by name, because a
#: type of the same name declared in the submission would otherwise shadow it (an ``Objects``
#: whose ``equals`` always says yes); javac rejects a type that clashes with such an import.
PLATFORM_TYPES: dict[str, str] = {
    **{name: f"java.lang.{name}" for name in _JAVA_LANG.split()},
    **{name: f"java.util.{name}" for name in _JAVA_UTIL.split()},
    "Collectors": "java.util.stream.Collectors",
    "IntStream": "java.util.stream.IntStream",
    "Stream": "java.util.stream.Stream",
    "BigInteger": "java.math.BigInteger",
    "MessageDigest": "java.security.MessageDigest",
    "NoSuchAlgorithmException": "java.security.NoSuchAlgorithmException",
}

_DRIVER = """
public class AssayHarness {
    public static void main(String[] args) throws Throwable {
        // Before any class of the submission is initialised: take the marker, then close fd 0
        // so the program cannot read it again (not through /proc/self/fd/0 either).
        java.io.FileInputStream in = new java.io.FileInputStream(java.io.FileDescriptor.in);
        java.io.ByteArrayOutputStream marker = new java.io.ByteArrayOutputStream();
        for (int b = in.read(); b != -1 && b != '\\n'; b = in.read()) {
            marker.write(b);
        }
        in.close();
        %s.%s(args);
        java.lang.System.out.flush();
        java.lang.System.err.flush();
        java.io.FileOutputStream out = new java.io.FileOutputStream(java.io.FileDescriptor.out);
        out.write('\\n');
        marker.writeTo(out);
        out.write('\\n');
        out.flush();
        java.lang.Runtime.getRuntime().halt(0);
    }
}
"""


def assemble(code: str, test: str, setup: str) -> str:
    main = MAIN.search(blank_literals(test))
    if main is None:
        raise ValueError("the Java test has no `static void main`")
    program = f"{setup}\n{code}\n{test}\n"
    name_at = len(setup) + len(code) + 2 + main.start() + main.group().rindex("main")
    decls = type_decls(program)
    # The test's own text decides the class when the program's scan cannot (a submission
    # that leaves a comment open): the result then fails to compile, it never raises.
    owner = enclosing(decls, name_at) or enclosing(type_decls(test), main.start())
    edits = [(name_at, name_at + len("main"), _RENAMED)]
    for decl in decls:
        if decl.public and decl.top_level:
            modifiers = re.sub(r"\bpublic\b", "", program[decl.start : decl.keyword])
            edits.append((decl.start, decl.keyword, modifiers))
    for begin, end, text in sorted(edits, reverse=True):
        program = program[:begin] + text + program[end:]
    return _imports(test) + program + _DRIVER % (owner.name if owner else "Main", _RENAMED)


def _imports(test: str) -> str:
    """Single-type imports of the platform types ``test`` names and does not declare."""
    text = blank_literals(test)
    own = {d.name.rsplit(".", 1)[-1] for d in type_decls(test)}
    used = set(re.findall(r"(?<![.\w$])[A-Z][\w$]*", text)) - own
    return "".join(f"import {PLATFORM_TYPES[n]};\n" for n in sorted(used & PLATFORM_TYPES.keys()))
