"""Claim: a Java program that spawns threads and processes without end is held by the run's
pids limit (JVM threads count as tasks) and leaves nothing behind.

The program first starts ``/bin/sleep`` children until ``ProcessBuilder.start`` fails, then
threads until ``Thread.start`` fails, counts every task it can see, and spins. The run must end
as ``time_limit`` (never ``sandbox_error``) with no more than ``Limits.processes`` tasks ever
alive, and once ``run()`` returns no process of the run may remain on the host; the next run on
the same slot sees no other process.
"""

from __future__ import annotations

import json
import shutil

import pytest

from assay import Limits

if shutil.which("javac") is None:
    pytest.skip("no OpenJDK (javac) on this host", allow_module_level=True)

PROCESSES = 32

BOMB = r"""
import java.io.File;

public class Main {
    static int tasks() {
        int n = 0;
        for (String pid : new File("/proc").list()) {
            if (pid.chars().allMatch(Character::isDigit)) {
                String[] t = new File("/proc/" + pid + "/task").list();
                n += t == null ? 0 : t.length;
            }
        }
        return n;
    }

    public static void main(String[] args) {
        int procs = 0, threads = 0;
        String procError = "", threadError = "";
        try {
            while (true) {
                new ProcessBuilder("/bin/sleep", "1000").start();
                procs++;
            }
        } catch (Throwable e) {
            procError = e.getClass().getSimpleName();
        }
        try {
            while (true) {
                Thread t = new Thread(() -> {
                    try { Thread.sleep(1_000_000); } catch (InterruptedException e) { }
                });
                t.setDaemon(true);
                t.start();
                threads++;
            }
        } catch (Throwable e) {
            threadError = e.getClass().getSimpleName();
        }
        System.out.println("procs=" + procs + " threads=" + threads + " tasks=" + tasks()
            + " procError=" + procError + " threadError=" + threadError);
        System.out.flush();
        long x = 0;
        while (true) x += System.nanoTime() & 1;
    }
}
"""

AFTER = r"""
import json, os
others = [int(d) for d in os.listdir("/proc") if d.isdigit() and int(d) != os.getpid()]
print(json.dumps(others))
"""


def test_java_fork_and_thread_bomb_is_contained(pool_runner, host) -> None:  # type: ignore[no-untyped-def]
    limits = Limits(time_s=2, memory_mb=512, processes=PROCESSES)
    result = pool_runner.run(BOMB, "java", "", limits)

    survivors = host.leftovers(pool_runner, host.new_tag())
    assert survivors == [], f"processes survived the run: {survivors}"
    assert result.status == "time_limit", (result.status, result.stderr[-2000:])

    assert b"Failed to start thread" in result.stderr  # JVM warnings stay off stdout
    fields = dict(item.split("=") for item in result.stdout.decode().split())
    assert fields["procError"] == "IOException", fields
    assert fields["threadError"] == "OutOfMemoryError", fields  # "unable to create native thread"
    assert int(fields["procs"]) < PROCESSES, fields
    assert int(fields["tasks"]) <= PROCESSES, fields

    after = pool_runner.run(AFTER, limits=Limits(time_s=1))
    assert after.status == "ok", after
    assert json.loads(after.stdout) == [], f"the next run sees other processes: {after.stdout!r}"
