"""JavaScript and TypeScript (HumanEval-X, MultiPL-E): top-level test code that checks with
``console.assert`` (HumanEval-X) or node's ``assert`` module (MultiPL-E).

``console.assert`` only prints when it fails, so the test's calls are rewritten to a harness
check with the same behaviour that also counts failures. A prelude, run before the submission,
captures the pristine functions the harness needs; after the test, the harness exits 1 if any
check failed, else prints the marker (read from stdin by the prelude, before the submission
runs; fd 0 is closed after it) and exits 0 at once (no timer or
``exit`` handler of the submission can print after it). A failed ``assert`` throws out of the
top-level code, so the finishing call never runs; ``process.exit`` or a top-level ``return`` in
the submission ends the program before it.

Tests compare through ``JSON.stringify``, ``Math`` and ``assert``, which a submission could
patch to make every comparison pass (``Array.prototype.toJSON = () => 1``). So the prelude
binds these globals as module constants (redeclaring one is a SyntaxError), the test's
``require`` calls go to the pristine ``require`` (a submission may rebind that name), and the
built-in objects' properties are recorded: the harness refuses the run if a recorded property
was replaced or removed, or a conversion hook was added. New helper methods (polyfills) are
allowed. What stays possible: a program that finds the marker in its own memory, or one that
patches a built-in and restores it before the harness looks.
"""

from __future__ import annotations

import re

_PRELUDE = r"""const { JSON, Math, Object, Array, String, Number, Boolean } = globalThis;
const __assayHarness = (() => {
  "use strict";
  const fs = require("fs");
  const assert = require("assert");
  const { format } = require("util");
  const { readSync, writeSync } = fs;
  const exit = process.exit.bind(process);
  const alloc = Buffer.alloc;
  const fromCharCode = String.fromCharCode;
  const is = Object.is;
  const { ownKeys, getOwnPropertyDescriptor: describe } = Reflect;
  const watched = [
    Object, Object.prototype, Array, Array.prototype, String, String.prototype, Number,
    Number.prototype, Boolean.prototype, Symbol, Symbol.prototype, Function.prototype, JSON,
    Math, Map.prototype, Set.prototype, BigInt.prototype, Date.prototype, RegExp.prototype,
    Reflect, assert, assert.strict,
  ];
  const hooks = ["toJSON", Symbol.toPrimitive];
  // Parallel arrays, walked with indexed loops: a patched iterator or array method must not
  // be able to blind the check that looks for patches.
  const keys = watched.map((target) => ownKeys(target));
  const descriptors = keys.map((names, i) => names.map((key) => describe(watched[i], key)));
  const same = (a, b) =>
    b !== undefined && is(a.value, b.value) && a.get === b.get && a.set === b.set;
  const tampered = () => {
    for (let i = 0; i < watched.length; i++) {
      const names = keys[i];
      for (let j = 0; j < names.length; j++) {
        if (!same(descriptors[i][j], describe(watched[i], names[j]))) {
          return `a built-in was modified (${String(names[j])})`;
        }
      }
      for (let h = 0; h < hooks.length; h++) {
        let known = false;
        for (let j = 0; j < names.length; j++) known = known || names[j] === hooks[h];
        if (!known && describe(watched[i], hooks[h]) !== undefined) {
          return `a conversion hook was added to a built-in (${String(hooks[h])})`;
        }
      }
    }
    return "";
  };
  let failures = 0;
  const check = (value, ...message) => {
    if (!value) {
      failures += 1;
      writeSync(2, `Assertion failed${message.length ? ": " + format(...message) : ""}\n`);
    }
  };
  const readLine = () => {
    const byte = alloc(1);
    const codes = [];
    for (;;) {
      let n;
      try {
        n = readSync(0, byte, 0, 1, null);
      } catch (err) {
        if (err.code === "EAGAIN") continue;
        throw err;
      }
      if (n !== 1 || byte[0] === 10) return fromCharCode(...codes);
      codes.push(byte[0]);
    }
  };
  // Taken before any code of the submission runs; fd 0 is then closed, so the program
  // cannot read the marker back (not through /proc/self/fd/0 either).
  const marker = readLine();
  fs.closeSync(0);
  const finish = () => {
    const why = failures !== 0 ? `${failures} assertion(s) failed` : tampered();
    if (why !== "") {
      writeSync(2, `assay harness: ${why}\n`);
      exit(1);
      return;
    }
    writeSync(1, `\n${marker}\n`);
    exit(0);
  };
  return Object.freeze({ check, finish, require });
})();
"""

_CONSOLE_ASSERT = re.compile(r"\bconsole\s*\.\s*assert\b")
_REQUIRE = re.compile(r"(?<![.\w$])require(?=\s*\()")


def assemble(code: str, test: str, setup: str) -> str:
    checked = _CONSOLE_ASSERT.sub("__assayHarness.check", test)
    checked = _REQUIRE.sub("__assayHarness.require", checked)
    return f"{_PRELUDE}\n{setup}\n{code}\n{checked}\n;__assayHarness.finish();\n"
