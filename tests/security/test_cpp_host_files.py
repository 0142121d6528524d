"""Claim: a C++ program cannot read host secrets or the project's files, nor write to the
host's paths."""

from __future__ import annotations

from pathlib import Path

PROBE = r"""
#include <cstdio>
static void probe(const char* path, const char* mode) {
    FILE* f = std::fopen(path, mode);
    std::printf("%s %s %s\n", mode, path, f ? "OPENED" : "denied");
    if (f) std::fclose(f);
}
int main() {
    probe("/etc/shadow", "r");
    probe("/root/.bashrc", "r");
    probe("PROJECT", "r");
    probe("/usr/bin/assay-pwned", "w");
    probe("/etc/passwd", "a");
    return 0;
}
"""


def test_cpp_cannot_touch_host_files(runner) -> None:  # type: ignore[no-untyped-def]
    project_file = str(Path(__file__).resolve())
    result = runner.run(PROBE.replace("PROJECT", project_file), "cpp")
    assert result.status == "ok", (result.status, result.stderr[-300:])
    out = result.stdout.decode()
    assert "OPENED" not in out, out
    assert not Path("/usr/bin/assay-pwned").exists()
