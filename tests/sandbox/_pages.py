"""A program for test_prefault.py and tests/security/test_prefault_is_the_supervisors.py."""

#: Prints how many pages of its writable private mappings the program's process has made
#: its own so far.
OWN_PAGES = """
import os
n = 0
fd = os.open("/proc/self/pagemap", os.O_RDONLY)
with open("/proc/self/maps") as fh:
    for line in fh:
        f = line.split()
        if f[1][1] != "w" or f[1][3] != "p" or f[-1] in ("[vvar]", "[vdso]", "[vsyscall]"):
            continue
        a, b = (int(x, 16) for x in f[0].split("-"))
        data = os.pread(fd, (b - a) // 4096 * 8, a // 4096 * 8)
        for i in range(0, len(data), 8):
            e = int.from_bytes(data[i : i + 8], "little")
            n += e >> 63 & 1 and e >> 56 & 1 and not e >> 61 & 1
print(n)
"""
