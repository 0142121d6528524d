"""Claim: a C++ program that allocates without end ends as ``memory_limit``, host untouched."""

from __future__ import annotations

from assay import Limits

BOMB = r"""
#include <cstdlib>
#include <cstring>
#include <vector>
int main() {
    std::vector<char*> keep;
    for (;;) {
        char* p = static_cast<char*>(std::malloc(16 << 20));
        if (!p) continue;
        std::memset(p, 1, 16 << 20);  // touch every page: real memory, not just address space
        keep.push_back(p);
    }
}
"""


def test_cpp_memory_bomb_hits_the_memory_limit(runner) -> None:  # type: ignore[no-untyped-def]
    result = runner.run(BOMB, "cpp", limits=Limits(time_s=5, memory_mb=128))
    assert result.status == "memory_limit", (result.status, result.stderr[-300:])
    assert result.peak_memory_bytes <= 140 * 1024 * 1024
    after = runner.run("int main(){return 0;}", "cpp")
    assert after.status == "ok"
