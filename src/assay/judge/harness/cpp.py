"""C++ (HumanEval-X, MultiPL-E): the test is an ``int main()`` full of ``assert``s.

The test's ``main`` is renamed and given an explicit ``return 0`` (falling off the end of a
non-``main`` function is undefined behaviour), and a new ``main`` calls it, then writes the
marker. The marker is taken off stdin before any code of the submission runs (a priority
constructor) and stdin is replaced by /dev/null. A failed ``assert`` aborts before the marker.
"""

from __future__ import annotations

import re

_MAIN = re.compile(r"\bint\s+main\s*\(\s*(void)?\s*\)")

#: Runs before any constructor of the submission (priority 101 precedes the default): takes
#: the marker off stdin and points stdin at /dev/null, so the program cannot read it back.
_TAKE = """
#include <fcntl.h>
#include <unistd.h>
static char __assay_marker[128];
static long __assay_marker_len = 0;
__attribute__((constructor(101))) static void __assay_take_marker() {
    long n = read(0, __assay_marker, sizeof __assay_marker);
    __assay_marker_len = n > 0 ? n : 0;
    int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) { dup2(null_fd, 0); close(null_fd); }
}
"""

_DRIVER = """
#include <cstdio>
#include <iostream>
int main() {
    int __assay_status = __assay_test_main();
    if (__assay_status != 0) return __assay_status;
    std::cout << std::endl;
    std::cout.flush();
    std::fflush(stdout);
    if (write(1, __assay_marker, __assay_marker_len) != __assay_marker_len) return 1;
    return 0;
}
"""


def assemble(code: str, test: str, setup: str) -> str:
    renamed, n = _MAIN.subn("int __assay_test_main()", test, count=1)
    if n != 1:
        raise ValueError("the C++ test has no `int main()`")
    end = renamed.rfind("}")
    if end < 0:
        raise ValueError("the C++ test's main has no closing brace")
    renamed = renamed[:end] + "    return 0;\n" + renamed[end:]
    return f"{_TAKE}\n{setup}\n{code}\n{renamed}\n{_DRIVER}"
