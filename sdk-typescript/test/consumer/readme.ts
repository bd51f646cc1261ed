// Issue 32: every code block of the README is either run by the consumer test, named by
// `<!-- consumer-test: FILE -->` before it (FILE is the name the README tells users to save
// it as), or skipped visibly because `<!-- not-runnable: why -->` stands before it. A block
// with neither marker is an error, so a new example cannot go untested by accident.

export interface ReadmeBlock {
  /** 1-based line of the opening fence in README.md. */
  line: number;
  lang: string;
  code: string;
  /** The file the block is saved as and run from, for a runnable block. */
  file?: string;
  /** Why the block is not run, for a block marked not-runnable. */
  skip?: string;
}

export function readmeBlocks(readme: string): ReadmeBlock[] {
  const lines = readme.split("\n");
  const blocks: ReadmeBlock[] = [];
  const unmarked: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)$/.exec(lines[i]!);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== "```") end++;
    if (end === lines.length) throw new Error(`README.md:${i + 1}: the code block is never closed`);
    let before = i - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const marker = /^<!-- (consumer-test|not-runnable): (.+?) -->$/.exec(lines[before] ?? "");
    const block = { line: i + 1, lang: open[1] || "text", code: lines.slice(i + 1, end).join("\n") + "\n" };
    if (!marker) unmarked.push(i + 1);
    else blocks.push(marker[1] === "consumer-test" ? { ...block, file: marker[2]! } : { ...block, skip: marker[2]! });
    i = end;
  }
  if (unmarked.length > 0) {
    throw new Error(`README.md: the blocks at line ${unmarked.join(", ")} have neither <!-- consumer-test: FILE --> ` +
      "nor <!-- not-runnable: why --> before them; run them in test/consumer/scenarios.ts or say why not");
  }
  return blocks;
}
