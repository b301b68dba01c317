// Reads a TAP log (tap's `--reporter=tap` output) and prints each failed assertion with the path of
// subtests leading to it and its YAML diagnostics, so the tail of a long run shows what failed.
//
//   node scripts/tap-failures.mjs LOG
//
// Prints nothing when nothing failed. Output is capped: a run with many failures shows the first.
import { readFileSync } from "node:fs";

const MAX_FAILURES = 20;
const MAX_DIAG_LINES = 30;

const lines = readFileSync(process.argv[2] ?? 0, "utf8").split("\n");
const path = []; // subtest names by depth (4 spaces per level)
const failuresAtStart = []; // failures counted when the subtest at that depth began
const out = [];
let shown = 0;
let total = 0;

for (let i = 0; i < lines.length; i++) {
  const line = lines[i];
  const indent = line.length - line.trimStart().length;
  const depth = Math.floor(indent / 4);
  const text = line.trimStart();
  const subtest = /^# Subtest: (.*)$/.exec(text);
  if (subtest) {
    path.length = depth;
    path[depth] = subtest[1];
    failuresAtStart[depth] = total;
    continue;
  }
  if (!/^not ok \d+/.test(text)) continue;
  const diag = [];
  let j = i + 1;
  if (lines[j]?.trimStart() === "---") {
    for (; j < lines.length; j++) {
      diag.push(lines[j].slice(indent));
      if (lines[j].trimStart() === "...") break;
    }
  }
  // A failed subtest repeats as a failed point of its parent: reported only when nothing inside was.
  if (closesSubtest(i, indent) && total > (failuresAtStart[depth] ?? 0)) continue;
  total++;
  if (shown >= MAX_FAILURES) continue;
  shown++;
  out.push(`not ok: ${[...path.slice(0, depth), text.replace(/^not ok \d+ - /, "")].join(" > ")}`);
  for (const d of diag.slice(0, MAX_DIAG_LINES)) out.push(`    ${d}`);
  if (diag.length > MAX_DIAG_LINES) out.push(`    (${diag.length - MAX_DIAG_LINES} more lines)`);
}

// A subtest's result line follows its own plan (`1..N`), printed one level deeper (comments such as
// `# time=` may come between).
function closesSubtest(at, indent) {
  for (let k = at - 1; k >= 0; k--) {
    const previous = lines[k];
    if (previous.trim() === "" || previous.trimStart().startsWith("# ")) continue;
    const previousIndent = previous.length - previous.trimStart().length;
    return previousIndent > indent && /^1\.\.\d+/.test(previous.trimStart());
  }
  return false;
}

if (total > 0) {
  console.log(`# failures (${total}${total > shown ? `, the first ${shown} shown` : ""}):`);
  console.log(out.join("\n"));
}
