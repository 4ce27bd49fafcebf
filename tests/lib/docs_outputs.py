#!/usr/bin/python3
"""Runs every command whose output README.md and docs/**/*.md show, and compares.

A documented output is a fenced block without a language (or ```text) that follows a fenced
```sh block, with nothing but blank lines between them. The sh block's commands run (see
run_block) and their combined stdout and stderr are compared with the documented block line by
line: a documented line that is exactly `...` matches any number of output lines (none
included); every other documented line must equal the output line at its place, byte for byte,
after both went through mask() (the masking rule below: wall-clock figures and other run-to-run
measurements only). A mismatch is reported as FILE:LINE with the documented and the actual line.

Also refused: an output block that shows a shell prompt running sailor (`$ ./sailor ...`), which
would show a command's output that nothing checks; write it as a ```sh block and an output
block instead.

A block that truly cannot be checked carries the marker line
    <!-- docs-output: not checked: WHY -->
just above its ```sh fence; it is not run, and it is counted and named in the summary.

usage: docs_outputs.py --sailor BIN --work DIR [--timeout S] [--show] [--rounding R] [FILE.md ...]
  (default files: README.md and docs/**/*.md, from the repository root, the current folder)
  --show: print each block's actual output (masked lines marked) instead of comparing
Exit status: 0 every documented output matches, 1 a mismatch or a failure, 2 usage.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import time

NOT_CHECKED = re.compile(r"^<!-- docs-output: not checked: (.+?) -->\s*$")
FENCE = re.compile(r"^```(\S*)\s*$")
PROMPT = re.compile(r"^\$ (\./)?sailor\b")

# The masking rule: the fields below, and only they, are replaced by a placeholder in both the
# documented and the actual line before the comparison. Each is identified by its label or
# column, never by its value; planner, simulator, loss, learning-rate, gradient-norm, memory
# accounting and cost figures are never masked.
#   train/run step line: the wall time per step and the tokens/s computed from it
#     "step   171/500 | loss ... | grad norm ... |    136.9 ms/step |     29917 tokens/s"
#   train/run "done:" line: "median 144.0 ms/step (28445 tokens/s)" and "peak RSS 126.3 MiB"
#     (the resident size of the process, which the allocator and the OS decide run by run)
#   train: "(OpenBLAS Haswell)", the name of the CPU kernel OpenBLAS picked for this machine
#   run: the rows of the table under "time per step by stage (mean over the stage's ranks; ms)"
#     (compute, p2p-wait, dp-sync, optimizer, step: wall milliseconds; peak RSS MiB), all but
#     the stage number
#   train/run held-out line: "eval after step 20 | val loss ... | 4096 tokens | 12.3 ms", the wall
#     time of the evaluation
#   plan: "search: 0.119 s, 318 plans simulated": the search's wall time, and how many plans it
#     simulated (the search threads share a pruning bound, so the count depends on which thread
#     got there first; the plans found do not)
STEP_WALL = re.compile(r"^(step +\d+/\d+ \|.*\|) +[0-9.]+ ms/step \| +[0-9]+ tokens/s$")
DONE_WALL = re.compile(r"median [0-9.]+ ms/step \([0-9]+ tokens/s\)")
PEAK_RSS = re.compile(r"peak RSS [0-9.]+ MiB")
BLAS_CORE = re.compile(r"\(OpenBLAS [^)]*\)")
STAGE_TABLE = "time per step by stage (mean over the stage's ranks; ms)"
STAGE_ROW = re.compile(r"^( +[0-9]+)( +[0-9.]+)+$")
SEARCH = re.compile(r"^search: [0-9.]+ s, [0-9]+ plans simulated,")
EVAL_WALL = re.compile(r"^(eval after step \d+ \| val loss [0-9.]+ \| \d+ tokens \|) [0-9.]+ ms$")


def mask(lines):
    """The lines with the run-to-run fields replaced (see the rule above)."""
    out, table = [], 0
    for line in lines:
        if table == 1:  # the column header after the table's title
            table = 2
        elif table == 2:
            m = STAGE_ROW.match(line)
            if m:
                out.append(m.group(1) + " <wall ms, peak RSS>")
                continue
            table = 0
        if line == STAGE_TABLE:
            table = 1
        m = STEP_WALL.match(line)
        if m:
            line = m.group(1) + " <wall> ms/step | <wall> tokens/s"
        m = EVAL_WALL.match(line)
        if m:
            line = m.group(1) + " <wall> ms"
        if line.startswith("done: "):
            line = DONE_WALL.sub("median <wall> ms/step (<wall> tokens/s)", line)
            line = PEAK_RSS.sub("peak RSS <rss> MiB", line)
        line = BLAS_CORE.sub("(OpenBLAS <cpu>)", line)
        line = SEARCH.sub("search: <wall> s, <n> plans simulated,", line)
        out.append(line)
    return out


def blocks_of(path):
    """Fenced blocks of a markdown file: dicts with lang, first (line number of the opening
    fence), end (line number of the closing fence), lines, marker (a not-checked reason)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().split("\n")
    blocks, i = [], 0
    while i < len(text):
        m = FENCE.match(text[i])
        if not m:
            i += 1
            continue
        start, lang, body = i, m.group(1), []
        i += 1
        while i < len(text) and text[i] != "```":
            body.append(text[i])
            i += 1
        j = start - 1
        while j >= 0 and not text[j].strip():
            j -= 1
        nm = NOT_CHECKED.match(text[j]) if j >= 0 else None
        blocks.append({"lang": lang, "first": start + 1, "end": i + 1, "lines": body,
                       "marker": nm.group(1) if nm else None, "gap_ok": None})
        # whether only blank lines separate this block from the previous one
        if len(blocks) > 1:
            prev = blocks[-2]
            between = text[prev["end"]:start]
            blocks[-1]["gap_ok"] = all(not s.strip() for s in between)
        i += 1
    return blocks


def pairs_of(path):
    """(sh block, output block) pairs, and the problems found in the file."""
    blocks, pairs, problems = blocks_of(path), [], []
    for k, b in enumerate(blocks):
        if b["lang"] in ("", "text") and (k == 0 or not (blocks[k - 1]["lang"] == "sh" and b["gap_ok"])):
            for n, line in enumerate(b["lines"]):
                if PROMPT.match(line):
                    problems.append(f"{path}:{b['first'] + 1 + n}: an output block shows a prompt "
                                    f"running sailor ('{line[:60]}'); write the command as a ```sh "
                                    "block followed by its output block, so that it is checked")
                    break
        if b["lang"] == "sh" and k + 1 < len(blocks):
            nxt = blocks[k + 1]
            if nxt["lang"] in ("", "text") and nxt["gap_ok"]:
                pairs.append((b, nxt))
    return pairs, problems


def commands_of(sh_lines):
    """Logical command lines of an sh block: `\\` continuations joined; blank lines and lines
    that are only a comment dropped. Each is (line number offset, command)."""
    cmds, cur, first = [], "", None
    for n, line in enumerate(sh_lines):
        if first is None:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            first = n
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        cmds.append((first, cur.strip()))
        cur, first = "", None
    if cur:
        cmds.append((first, cur.strip()))
    return cmds


TMP = re.compile(r"(?<![\w./-])/tmp(?=/|\b)")
SAILOR = re.compile(r"(?<![\w./-])\./sailor(?![\w./-])")


def run_block(path, sh, tmpdir, sailor, timeout):
    """Runs the block's commands one by one from the repository root, each under `timeout`,
    `./sailor` replaced by the binary under test and /tmp by tmpdir (the file's own folder in
    the test's work folder, shared by the blocks of one file, which run in file order). Returns
    (output lines with tmpdir written back as /tmp, problems)."""
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    out, problems = "", []
    for off, cmd in commands_of(sh["lines"]):
        where = f"{path}:{sh['first'] + 1 + off}"
        if re.match(r"^(export|cd|source|\.)\s", cmd):
            problems.append(f"{where}: '{cmd.split()[0]}' does not carry from one command to the "
                            "next in this check; pass variables on the command line")
            continue
        line = SAILOR.sub(shlex.quote(sailor), TMP.sub(tmpdir, cmd))
        logf = os.path.join(tmpdir, ".out")
        with open(logf, "wb") as f:
            rc = subprocess.call(["timeout", "-k", "10", str(timeout), "bash", "-c", line],
                                 stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                 env=env)
        with open(logf, encoding="utf-8", errors="replace") as f:
            text = f.read()
        os.unlink(logf)
        if rc in (124, 137):
            problems.append(f"{where}: timed out after {timeout} s: {cmd}")
        out += text.replace(tmpdir, "/tmp")
    lines = out.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines, problems


NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:e[-+]?[0-9]+)?")
ROUNDING = 0.0  # --rounding: the relative difference two numbers of a line may have


def same(doc_line, act_line):
    """Whether a documented line (masked) and an actual one (masked) agree: equal, or with
    --rounding R, equal but for numbers that differ by at most R of their size (the sanitizer
    build's other optimisation level rounds the last digit of a training figure otherwise)."""
    if doc_line == act_line:
        return True
    if not ROUNDING or NUMBER.sub("#", doc_line) != NUMBER.sub("#", act_line):
        return False
    for d, a in zip(NUMBER.findall(doc_line), NUMBER.findall(act_line)):
        x, y = float(d), float(a)
        if abs(x - y) > ROUNDING * max(abs(x), abs(y)):
            return False
    return True


def match(doc, act):
    """None if the documented lines (masked) match the actual ones (masked), else (index into
    doc, index into act or None) of the first documented line that found no match; an index
    len(doc) means the output goes on after the documented block ends."""
    segs, cur, first, free = [], [], 0, False   # segments: (first index, lines, `...` before)
    for i, line in enumerate(doc):
        if line == "...":
            if cur:
                segs.append((first, cur, seg_free))
                cur = []
            free = True
        else:
            if not cur:
                first, seg_free, free = i, free, False
            cur.append(line)
    if cur:
        segs.append((first, cur, seg_free))
    open_end = bool(doc) and doc[-1] == "..."
    pos = 0
    for k, (first, lines, free) in enumerate(segs):
        if not free:
            cands = [pos]
        elif k == len(segs) - 1 and not open_end:      # the last lines: at the end
            cands = [max(pos, len(act) - len(lines))]
        else:
            cands = range(pos, len(act) - len(lines) + 1)
        best = None                                     # (lines matched, start)
        for c in cands:
            n = 0
            while n < len(lines) and c + n < len(act) and same(lines[n], act[c + n]):
                n += 1
            if best is None or n > best[0]:
                best = (n, c)
            if n == len(lines):
                break
        n, c = best or (0, pos)
        if n < len(lines) and free and len(cands) == 1:
            # the last lines, not at the end: say so if they stand somewhere before it
            for c2 in range(pos, len(act) - len(lines)):
                if all(same(d, x) for d, x in zip(lines, act[c2:c2 + len(lines)])):
                    return len(doc), c2 + len(lines)
        if n < len(lines):
            return first + n, (c + n if c + n < len(act) else None)
        pos = c + len(lines)
    if not open_end and pos < len(act):
        return len(doc), pos
    return None


def check_pair(path, sh, outb, tmpdir, sailor, timeout, show):
    t0 = time.monotonic()
    actual, problems = run_block(path, sh, tmpdir, sailor, timeout)
    took = time.monotonic() - t0
    where = f"{path}:{outb['first'] + 1}"
    if show:
        print(f"== {where} ({took:.1f} s)")
        for raw, m in zip(actual, mask(actual)):
            print(("  " if raw == m else "~ ") + raw)
        return problems
    doc, act = mask(outb["lines"]), mask(actual)
    bad = match(doc, act)
    if bad is not None:
        i, j = bad
        got = actual[j] if j is not None else "(the output ends here)"
        if i < len(doc):
            problems.append(f"{path}:{outb['first'] + 1 + i}: documented and actual output differ\n"
                            f"    documented: {outb['lines'][i]}\n    actual:     {got}")
        else:
            problems.append(f"{path}:{outb['end']}: the output goes on after the documented block "
                            f"ends (end it with a '...' line to leave the rest out)\n"
                            f"    actual:     {got}")
        problems.append(f"    (the whole actual output: {len(actual)} lines; "
                        f"tests/lib/docs_outputs.py --show {path} prints it)")
    if not problems:
        print(f"ok   {where}: {len(outb['lines'])} documented lines match ({took:.1f} s)")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sailor", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--show", action="store_true")
    ap.add_argument("--rounding", type=float, default=0.0,
                    help="numbers of a line may differ by this share of their size (default 0: "
                         "byte for byte; the sanitizer build of make check rounds otherwise)")
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    global ROUNDING
    ROUNDING = a.rounding
    files = a.files or ["README.md"] + sorted(glob.glob("docs/**/*.md", recursive=True))
    sailor = os.path.abspath(a.sailor)
    problems, counts, unchecked = [], {}, []
    for path in files:
        pairs, probs = pairs_of(path)
        for p in probs:
            print("FAIL " + p)
        problems += probs
        tmpdir = os.path.join(os.path.abspath(a.work), re.sub(r"[^A-Za-z0-9]+", "-", path), "tmp")
        os.makedirs(tmpdir, exist_ok=True)
        for sh, outb in pairs:
            if sh["marker"]:
                unchecked.append(f"{path}:{outb['first'] + 1}: {sh['marker']}")
                continue
            counts[path] = counts.get(path, 0) + 1
            probs = check_pair(path, sh, outb, tmpdir, sailor, a.timeout, a.show)
            for p in probs:
                print("FAIL " + p if not p.startswith("    ") else p)
            problems += probs
    if a.show:
        return 0
    total = sum(counts.values())
    print(f"{total} documented outputs checked: " +
          ", ".join(f"{f} {n}" for f, n in counts.items()))
    if unchecked:
        print(f"{len(unchecked)} marked not checked:")
        for u in unchecked:
            print("    " + u)
    failed = [p for p in problems if not p.startswith("    ")]
    if failed:
        print(f"{len(failed)} problems")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
