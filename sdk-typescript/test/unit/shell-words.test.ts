// ORCH8_SERVER is split into a command as Python's shlex.split does, in every SDK: the cases
// are shared (conformance/shell-words-cases.json) with sdk-python and sdk-go.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { shellWords } from "../../src/testing/server.js";

interface Case { value: string; words?: string[]; error?: boolean }
const { cases } = JSON.parse(readFileSync(new URL("../../../conformance/shell-words-cases.json", import.meta.url), "utf8")) as { cases: Case[] };

for (const c of cases) {
  test(`ORCH8_SERVER=${c.value}`, () => {
    if (c.error) assert.throws(() => shellWords(c.value), /ORCH8_SERVER=.*unclosed/);
    else assert.deepEqual(shellWords(c.value), c.words);
  });
}
