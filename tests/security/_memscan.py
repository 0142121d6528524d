"""A snippet for sandboxed programs that look for secrets in their own memory.

Every program is a fork of a warm interpreter, so anything that interpreter once held could
linger in a program's heap. Probes prepend ``READABLE_MEMORY`` and iterate
``readable_memory()`` to get ``(label, bytes)`` for every readable mapping.
"""

READABLE_MEMORY = r"""
def readable_memory():
    with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", buffering=0) as mem:
        for line in maps:
            parts = line.split()
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if "r" not in parts[1] or parts[-1] in ("[vvar]", "[vsyscall]"):
                continue
            try:
                mem.seek(lo)
                chunk = mem.read(hi - lo)
            except (OSError, OverflowError, ValueError):
                continue
            yield f"memory {parts[0]} {parts[-1]}", chunk
"""
